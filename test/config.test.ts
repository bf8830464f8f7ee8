import { describe, expect, test } from 'bun:test';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConfigError,
  databasePath,
  DEFAULT_PLANNER_URL,
  readEnvironment,
  readServerEnvironment,
  serveConfig,
  type Env,
} from '../src/config.ts';
import { limits } from '../src/limits.ts';
import { tempDir } from './support.ts';

const TOKEN = 'a-valid-ingest-token-of-24+';

/** The rules a secret that clients send (INGEST_TOKEN, APPROVAL_PASSWORD) is refused by, after the variable's name. */
const RULE = {
  blank: 'must not be only whitespace',
  outer: 'must not begin or end with whitespace',
  control: 'must not hold a control character (a newline, a tab or another)',
  ascii: 'must hold only printable ASCII characters (a Bearer header cannot carry others)',
};

function refusal(env: Env): string {
  try {
    serveConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('serveConfig', () => {
  test('defaults follow the contract', () => {
    const config = serveConfig({ INGEST_TOKEN: TOKEN });
    expect(config).toEqual({
      ingestToken: TOKEN,
      approvalPassword: null,
      publicUrl: '',
      trustProxy: false,
      telemetryRetentionDays: null,
      host: '0.0.0.0',
      port: 8080,
      databasePath: './data/ev-ingest.db',
      durability: 'full',
      logLevel: 'info',
      logFormat: 'text',
      metricsListen: null,
      planner: { url: DEFAULT_PLANNER_URL, apiKey: null, defaultToken: null, tokens: new Map() },
    });
  });

  test('INGEST_TOKEN missing or under 24 characters refuses to start, naming the rule', () => {
    expect(refusal({})).toBe('INGEST_TOKEN must be set to at least 24 characters');
    expect(refusal({ INGEST_TOKEN: 'x'.repeat(23) })).toBe(
      'INGEST_TOKEN must be set to at least 24 characters (it has 23)',
    );
    expect(serveConfig({ INGEST_TOKEN: 'x'.repeat(24) }).ingestToken).toBe('x'.repeat(24));
  });

  test('APPROVAL_PASSWORD set but under 12 characters refuses to start', () => {
    expect(refusal({ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'short-pass1' })).toStartWith(
      'APPROVAL_PASSWORD must have at least 12 characters (it has 11)',
    );
    expect(serveConfig({ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'long-enough-1' }).approvalPassword).toBe(
      'long-enough-1',
    );
  });

  test('APPROVAL_PASSWORD equal to INGEST_TOKEN refuses to start, without either value', () => {
    expect(refusal({ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: TOKEN })).toBe(
      'APPROVAL_PASSWORD must differ from INGEST_TOKEN, which every car app holds; unset it to turn pairing off',
    );
  });

  // Refused, not trimmed: HTTP drops a header's outer whitespace and cannot carry a newline, so no client could match.
  test('an INGEST_TOKEN or APPROVAL_PASSWORD no client can send as given refuses to start, without its value', () => {
    const cases: [Env, string][] = [
      [{ INGEST_TOKEN: ' '.repeat(24) }, `INGEST_TOKEN ${RULE.blank}`],
      [{ INGEST_TOKEN: ' ' }, `INGEST_TOKEN ${RULE.blank}`],
      [{ INGEST_TOKEN: `${TOKEN} ` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: ` ${TOKEN}` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: `${TOKEN}\t` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: `${TOKEN}\n` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: `${TOKEN}\u00a0` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: `\ufeff${TOKEN}` }, `INGEST_TOKEN ${RULE.outer}`],
      [{ INGEST_TOKEN: `a-valid\ningest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: `a-valid\r\ningest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: `a-valid\tingest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: `a-valid\x00ingest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: `a-valid\x1fingest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: `a-valid\x7fingest-token-of-24+` }, `INGEST_TOKEN ${RULE.control}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: ' '.repeat(12) }, `APPROVAL_PASSWORD ${RULE.blank}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: ' ' }, `APPROVAL_PASSWORD ${RULE.blank}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'long-enough-1 ' }, `APPROVAL_PASSWORD ${RULE.outer}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: '\tlong-enough-1' }, `APPROVAL_PASSWORD ${RULE.outer}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'long\renough-1' }, `APPROVAL_PASSWORD ${RULE.control}`],
      [{ INGEST_TOKEN: 'a-valid-ingest-token-of-24+é' }, `INGEST_TOKEN ${RULE.ascii}`],
      [{ INGEST_TOKEN: 'a-valid\u00a0ingest-token-of-24+' }, `INGEST_TOKEN ${RULE.ascii}`],
      [{ INGEST_TOKEN: 'a-valid\u0085ingest-token-of-24+' }, `INGEST_TOKEN ${RULE.ascii}`],
      [{ INGEST_TOKEN: TOKEN, APPROVAL_PASSWORD: 'long-enough-ü' }, `APPROVAL_PASSWORD ${RULE.ascii}`],
    ];
    for (const [env, message] of cases) {
      const refused = refusal(env);
      expect(refused).toBe(message);
      expect(refused).not.toMatch(/token-of-24|enough/);
    }
  });

  test('a secret with whitespace inside, which a header and a form field carry, is kept as it is', () => {
    const config = serveConfig({ INGEST_TOKEN: 'a valid ingest token of 24+', APPROVAL_PASSWORD: 'long enough 1' });
    expect(config.ingestToken).toBe('a valid ingest token of 24+');
    expect(config.approvalPassword).toBe('long enough 1');
  });

  test('an unusable PORT refuses to start', () => {
    for (const port of ['http', '-1', '65536', '80.5']) {
      expect(refusal({ INGEST_TOKEN: TOKEN, PORT: port })).toBe(
        'PORT must be a whole number from 0 to 65535 (0 picks a free port)',
      );
    }
    expect(serveConfig({ INGEST_TOKEN: TOKEN, PORT: '9000' }).port).toBe(9000);
  });

  test('enumerated variables accept only their values', () => {
    expect(refusal({ INGEST_TOKEN: TOKEN, DURABILITY: 'eventual' })).toBe('DURABILITY must be one of full, fast');
    expect(refusal({ INGEST_TOKEN: TOKEN, TRUST_PROXY: 'yes' })).toBe('TRUST_PROXY must be one of 0, 1');
    expect(refusal({ INGEST_TOKEN: TOKEN, LOG_LEVEL: 'loud' })).toBe(
      'LOG_LEVEL must be one of debug, info, warn, error',
    );
  });

  test('PUBLIC_URL loses its trailing slash and keeps a sub-path', () => {
    expect(serveConfig({ INGEST_TOKEN: TOKEN, PUBLIC_URL: 'https://ev.example.org/ingest/' }).publicUrl).toBe(
      'https://ev.example.org/ingest',
    );
    expect(refusal({ INGEST_TOKEN: TOKEN, PUBLIC_URL: 'ev.example.org' })).toBe(
      'PUBLIC_URL must be an http:// or https:// URL',
    );
    for (const withQuery of ['https://ev.example.org/?x=1', 'https://ev.example.org/?', 'https://ev.example.org/#']) {
      expect(refusal({ INGEST_TOKEN: TOKEN, PUBLIC_URL: withQuery })).toBe(
        'PUBLIC_URL must have no query or fragment (/pair?code=… is appended to it)',
      );
    }
  });

  test('PLANNER_URL must be an http:// or https:// URL', () => {
    expect(serveConfig({ INGEST_TOKEN: TOKEN, PLANNER_URL: 'http://planner.lan:8000/api' }).planner.url).toBe(
      'http://planner.lan:8000/api',
    );
    for (const url of ['ftp://planner.example.com/x', 'planner.example.com/x']) {
      expect(refusal({ INGEST_TOKEN: TOKEN, PLANNER_URL: url })).toBe('PLANNER_URL must be an http:// or https:// URL');
    }
  });

  test('PLANNER_TOKENS pairs are parsed by lower-case installation id and never echoed when wrong', () => {
    const config = serveConfig({
      INGEST_TOKEN: TOKEN,
      PLANNER_TOKENS: '5B0C3C3E-9A51-4C5E-8F55-2F0E7B0C1A01=tok-a, 0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b=tok-b',
    });
    expect([...config.planner.tokens]).toEqual([
      ['5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01', 'tok-a'],
      ['0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b', 'tok-b'],
    ]);
    const message = refusal({ INGEST_TOKEN: TOKEN, PLANNER_TOKENS: 'not-a-uuid=secret-token' });
    expect(message).toBe(
      'PLANNER_TOKENS entry 1 must be <installationId>=<token> with a UUID and a token without whitespace',
    );
    expect(message).not.toContain('secret-token');
  });

  test('PLANNER_TOKENS_FILE holds a pair a line; refused: a token with inner whitespace, an installation twice', () => {
    const [a, b] = ['5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01', '0f8a9b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b'];
    const file = join(tempDir(), 'planner-tokens');
    writeFileSync(file, `${a}=tok-a\r\n${b}=tok-b,\n`);
    const config = serveConfig(readServerEnvironment({ INGEST_TOKEN: TOKEN, PLANNER_TOKENS_FILE: file }, tempDir()));
    expect([...config.planner.tokens]).toEqual([
      [a, 'tok-a'],
      [b, 'tok-b'],
    ]);
    expect(refusal({ INGEST_TOKEN: TOKEN, PLANNER_TOKENS: `${a}=tok-a\n\n${b}=tok b` })).toBe(
      'PLANNER_TOKENS entry 3 must be <installationId>=<token> with a UUID and a token without whitespace',
    );
    const twice = refusal({ INGEST_TOKEN: TOKEN, PLANNER_TOKENS: `${a}=tok-a,${a.toUpperCase()}=secret-token` });
    expect(twice).toBe(`PLANNER_TOKENS names installation ${a} twice; give each one token`);
    expect(twice).not.toContain('secret-token');
  });
});

describe('readEnvironment', () => {
  test('.env in the working directory is read; the process environment wins', () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, '.env'),
      '# comment\nexport INGEST_TOKEN="from-dotenv-token-0123456789"\nPORT=9001 # inline comment\nHOST=127.0.0.1\n',
    );
    const env = readEnvironment({ HOST: '::1' }, dir);
    expect(env.INGEST_TOKEN).toBe('from-dotenv-token-0123456789');
    expect(env.PORT).toBe('9001');
    expect(env.HOST).toBe('::1');
  });

  test('a quoted .env value loses its quotes also when a comment follows it; a # inside the quotes is kept', () => {
    const dir = tempDir();
    const lines = [
      `INGEST_TOKEN="${TOKEN}" # the shared token`,
      "APPROVAL_PASSWORD='long enough 1'\t# single quotes",
      'DATABASE_PATH="/srv/ev/live.db"  # the live database',
      'PLANNER_TOKEN="a \\"b\\" # c" # escaped quotes, then a comment',
      'PLANNER_API_KEY="x\\\\ny\\nz"',
      'PUBLIC_URL="https://ev.example.org"#',
      `HOST="a"b"`,
    ];
    writeFileSync(join(dir, '.env'), `${lines.join('\n')}\n`);
    expect(readEnvironment({}, dir)).toEqual({
      INGEST_TOKEN: TOKEN,
      APPROVAL_PASSWORD: 'long enough 1',
      DATABASE_PATH: '/srv/ev/live.db',
      PLANNER_TOKEN: 'a "b" # c',
      PLANNER_API_KEY: 'x\\ny\nz', // an escaped backslash, then an n; then a line break
      PUBLIC_URL: 'https://ev.example.org',
      HOST: 'a"b', // an inner quote left unescaped: the outer pair still encloses the value
    });
  });

  test('an empty variable in the environment counts as unset: the .env value stands', () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.env'), 'DATABASE_PATH=/srv/ev/live.db\n');
    expect(databasePath(readEnvironment({ DATABASE_PATH: '' }, dir))).toBe('/srv/ev/live.db');
  });

  test('no .env in the working directory is read as no settings at all, not as a refusal', () => {
    expect(readEnvironment({ HOST: '::1' }, tempDir())).toEqual({ HOST: '::1' });
  });

  test('a .env that cannot be read refuses the start with one line naming it', () => {
    const dir = tempDir();
    mkdirSync(join(dir, '.env'));
    expect(() => readEnvironment({}, dir)).toThrow(
      new ConfigError(`${join(dir, '.env')} cannot be read (EISDIR); fix or remove it`),
    );
  });

  // A check before the read (existsSync) would call this .env absent and start without it.
  test('a .env that is a link to itself is read, not checked first, and refuses the start', () => {
    const dir = tempDir();
    const dotenvPath = join(dir, '.env');
    symlinkSync(dotenvPath, dotenvPath);
    expect(() => readEnvironment({}, dir)).toThrow(
      new ConfigError(`${dotenvPath} cannot be read (ELOOP); fix or remove it`),
    );
  });

  test('<NAME>_FILE supplies a secret without its trailing newline', () => {
    const dir = tempDir();
    const file = join(dir, 'token');
    writeFileSync(file, 'token-from-a-file-0123456789\n');
    expect(readServerEnvironment({ INGEST_TOKEN_FILE: file }, dir).INGEST_TOKEN).toBe('token-from-a-file-0123456789');
  });

  test('<NAME>_FILE loses one final LF or CRLF; a second is refused as whitespace, naming the file variable', () => {
    const dir = tempDir();
    const file = join(dir, 'secret');
    const fromFile = (name: 'INGEST_TOKEN' | 'APPROVAL_PASSWORD', contents: string) => {
      writeFileSync(file, contents);
      const otherSecrets = name === 'APPROVAL_PASSWORD' ? { INGEST_TOKEN: TOKEN } : {};
      return readServerEnvironment({ ...otherSecrets, [`${name}_FILE`]: file }, dir);
    };
    expect(serveConfig(fromFile('INGEST_TOKEN', `${TOKEN}\r\n`)).ingestToken).toBe(TOKEN);
    expect(serveConfig(fromFile('APPROVAL_PASSWORD', 'long-enough-1\n')).approvalPassword).toBe('long-enough-1');
    const token = 'INGEST_TOKEN from INGEST_TOKEN_FILE (only its one final newline is dropped)';
    const password = 'APPROVAL_PASSWORD from APPROVAL_PASSWORD_FILE (only its one final newline is dropped)';
    expect(refusal(fromFile('INGEST_TOKEN', `${TOKEN}\n\n`))).toBe(`${token} ${RULE.outer}`);
    expect(refusal(fromFile('INGEST_TOKEN', `${TOKEN}\r\n\r\n`))).toBe(`${token} ${RULE.outer}`);
    expect(refusal(fromFile('INGEST_TOKEN', `${TOKEN} \n`))).toBe(`${token} ${RULE.outer}`);
    expect(refusal(fromFile('INGEST_TOKEN', '\n\n'))).toBe(`${token} ${RULE.blank}`);
    expect(refusal(fromFile('APPROVAL_PASSWORD', 'long-enough-1\n\n'))).toBe(`${password} ${RULE.outer}`);
    // An empty INGEST_TOKEN_FILE counts as unset: the value came from INGEST_TOKEN.
    expect(refusal(readServerEnvironment({ INGEST_TOKEN: `${TOKEN}\n`, INGEST_TOKEN_FILE: '' }, dir))).toBe(
      `INGEST_TOKEN ${RULE.outer}`,
    );
    expect(refusal(fromFile('APPROVAL_PASSWORD', 'long\nenough-1\n'))).toBe(`${password} ${RULE.control}`);
  });

  test('a double-quoted INGEST_TOKEN in .env keeps its trailing space, and is refused for it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.env'), `INGEST_TOKEN="${TOKEN} "\n`);
    expect(refusal(readEnvironment({}, dir))).toBe(`INGEST_TOKEN ${RULE.outer}`);
  });

  test('a secret set both plainly and as <NAME>_FILE in one place refuses to start, naming the place', () => {
    const dir = tempDir();
    const file = join(dir, 'password');
    writeFileSync(file, 'approval-password-1\n');
    expect(() =>
      readServerEnvironment({ APPROVAL_PASSWORD: 'x'.repeat(12), APPROVAL_PASSWORD_FILE: file }, dir),
    ).toThrow(
      new ConfigError(
        'APPROVAL_PASSWORD and APPROVAL_PASSWORD_FILE are both set in the environment; set only one of them',
      ),
    );
    writeFileSync(join(dir, '.env'), `APPROVAL_PASSWORD=${'x'.repeat(12)}\nAPPROVAL_PASSWORD_FILE=${file}\n`);
    expect(() => readServerEnvironment({}, dir)).toThrow(
      new ConfigError(
        `APPROVAL_PASSWORD and APPROVAL_PASSWORD_FILE are both set in ${join(dir, '.env')}; set only one of them`,
      ),
    );
  });

  test('a secret in the environment, in either form, replaces both forms of .env: the environment wins whole', () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    writeFileSync(
      join(dir, '.env'),
      'INGEST_TOKEN=from-dotenv-token-0123456789\nAPPROVAL_PASSWORD_FILE=/nonexistent/password\n' +
        'PLANNER_API_KEY=dotenv-key\n',
    );
    const processEnv = { INGEST_TOKEN_FILE: tokenFile, APPROVAL_PASSWORD: 'long-enough-1' };
    expect(serveConfig(readServerEnvironment(processEnv, dir))).toMatchObject({
      ingestToken: TOKEN,
      approvalPassword: 'long-enough-1',
      planner: { apiKey: 'dotenv-key' }, // a secret the environment does not give still comes from .env
    });
    const commandsSee = readEnvironment(processEnv, dir);
    expect([commandsSee.INGEST_TOKEN, commandsSee.APPROVAL_PASSWORD_FILE]).toEqual([undefined, undefined]);
  });

  test('an empty <NAME>_FILE refuses to start instead of leaving its feature off', () => {
    const dir = tempDir();
    const file = join(dir, 'password');
    writeFileSync(file, '\n');
    expect(() => readServerEnvironment({ APPROVAL_PASSWORD_FILE: file }, dir)).toThrow(
      new ConfigError(
        'APPROVAL_PASSWORD_FILE names an empty file; put the value in it or unset APPROVAL_PASSWORD_FILE',
      ),
    );
  });

  test('a <NAME>_FILE that cannot be read refuses to start, naming the variable and the reason', () => {
    expect(() => readServerEnvironment({ PLANNER_API_KEY_FILE: '/nonexistent/key' }, tempDir())).toThrow(
      'PLANNER_API_KEY_FILE names a file that cannot be read (ENOENT)',
    );
  });

  test('a secret read from its file and then refused is not printed', () => {
    const path = join(tempDir(), 'token');
    writeFileSync(path, 'short-secret-value\n');
    const message = refusal(readServerEnvironment({ INGEST_TOKEN_FILE: path }, tempDir()));
    expect(message).toStartWith(`INGEST_TOKEN must be set to at least ${limits.ingestTokenMinChars} characters`);
    expect(message).not.toContain('short-secret-value');
  });

  test('EV_INGEST_BENCH_GROUP_WRITES (a benchmark switch) is unset by default, else a positive whole number', () => {
    expect(serveConfig({ INGEST_TOKEN: TOKEN }).maxGroupWrites).toBeUndefined();
    expect(serveConfig({ INGEST_TOKEN: TOKEN, EV_INGEST_BENCH_GROUP_WRITES: '1' }).maxGroupWrites).toBe(1);
    expect(serveConfig({ INGEST_TOKEN: TOKEN, EV_INGEST_BENCH_GROUP_WRITES: ' 250 ' }).maxGroupWrites).toBe(250);
    for (const value of ['0', '-1', '1.5', '1e3', 'one']) {
      expect(refusal({ INGEST_TOKEN: TOKEN, EV_INGEST_BENCH_GROUP_WRITES: value })).toBe(
        'EV_INGEST_BENCH_GROUP_WRITES must be a positive whole number (a benchmark switch; leave it unset)',
      );
    }
  });

  // That a bad server setting or secret file does not stop the commands: test/devices.test.ts runs them.
  test('the command-line tools take DATABASE_PATH, or its default', () => {
    expect(databasePath({ DATABASE_PATH: '/var/lib/ev/ev.db' })).toBe('/var/lib/ev/ev.db');
    expect(databasePath({ DATABASE_PATH: ' ' })).toBe('./data/ev-ingest.db');
    expect(databasePath({})).toBe('./data/ev-ingest.db');
  });
});
