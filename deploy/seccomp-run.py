#!/usr/bin/python3
"""
Runs a command under the seccomp filter that deploy/ev-ingest.service asks systemd for, rebuilt from this
host's `systemd-analyze syscall-filter` groups: SystemCallFilter=@system-service minus @privileged, every
other system call failing with EPERM (SystemCallErrorNumber), native architecture only, and socket()
limited to AF_UNIX, AF_INET and AF_INET6 (RestrictAddressFamilies; others fail with EAFNOSUPPORT).
For hosts without systemd as PID 1; needs python3-seccomp. See docs/operations.md (Running under systemd).
Usage: seccomp-run.py COMMAND [ARGUMENT...]
"""
import errno
import os
import socket
import subprocess
import sys

import seccomp


def syscall_groups():
    """Each `@group` of systemd-analyze with its members (system calls and nested groups)."""
    listing = subprocess.run(['systemd-analyze', 'syscall-filter'], capture_output=True, text=True, check=True)
    groups, current = {}, None
    for line in listing.stdout.splitlines():
        item = line.strip()
        if not item or item.startswith('#'):
            continue
        if line.startswith(' '):
            groups[current].append(item)
        else:
            current = item
            groups[current] = []
    return groups


def expand(groups, name):
    calls = set()
    for item in groups[name]:
        calls |= expand(groups, item) if item.startswith('@') else {item}
    return calls


groups = syscall_groups()
allowed = expand(groups, '@system-service') - expand(groups, '@privileged')
families = {socket.AF_UNIX, socket.AF_INET, socket.AF_INET6}
fltr = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))  # the native architecture only
for call in sorted(allowed - {'socket'}):
    try:
        fltr.add_rule(seccomp.ALLOW, call)
    except (RuntimeError, ValueError):
        pass  # not a system call of this architecture: systemd skips it too
for family in range(max(families) + 1):
    action = seccomp.ALLOW if family in families else seccomp.ERRNO(errno.EAFNOSUPPORT)
    fltr.add_rule(action, 'socket', seccomp.Arg(0, seccomp.EQ, family))
fltr.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), 'socket', seccomp.Arg(0, seccomp.GT, max(families)))
fltr.load()
os.execvp(sys.argv[1], sys.argv[1:])
