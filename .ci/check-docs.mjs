// Checks the docs a reader relies on: every relative link in README.md and docs/ resolves (file and heading),
// README.md stays a five-minute read, nothing names documents a clone does not hold, no conflict marker is left.
// Usage: node .ci/check-docs.mjs (from the repository root); exit 1 with one line per problem.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const README_MAX_LINES = 150;
// Specs and notes outside the repository: the project's own files state their rules in their own words.
const FORBIDDEN =
  /\bthe seed\b|\bseed-spec\b|\bseed's\b|\bthe contract\b|\bcontract's\b|contract(-2)?\.md|\.\.\/shared\b|\/work\//i;

// A merge conflict committed unresolved: git writes these at the start of a line, seven characters each.
const CONFLICT_MARKER = /^(<{7}|={7}|>{7})( |$)/;

const problems = [];
const markdown = ['README.md', 'CHANGELOG.md', ...filesUnder('docs').filter((file) => file.endsWith('.md'))];

for (const file of ['README.md', ...filesUnder('docs').filter((file) => file.endsWith('.md'))]) checkLinks(file);
checkReadmeLength();
for (const file of [...filesUnder('src'), ...markdown]) checkNames(file);

for (const problem of problems) console.log(problem);
console.log(problems.length === 0 ? 'docs: ok' : `docs: ${problems.length} problem(s)`);
process.exit(problems.length === 0 ? 0 : 1);

function filesUnder(folder) {
  return readdirSync(folder, { recursive: true })
    .map((name) => join(folder, String(name)))
    .filter((path) => statSync(path).isFile());
}

/** Every `[text](target)` whose target is not a URL must name an existing file, and a heading of it after `#`. */
function checkLinks(file) {
  const text = withoutCode(readFileSync(file, 'utf8'));
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split('#');
    const linked = path === '' ? file : join(dirname(file), path);
    if (!existsSync(linked)) {
      problems.push(`${file}: link ${target}: ${relative('.', linked)} does not exist`);
    } else if (anchor !== undefined && !anchorsOf(linked).has(anchor)) {
      problems.push(`${file}: link ${target}: no heading #${anchor} in ${relative('.', linked)}`);
    }
  }
}

/** The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped, spaces as dashes. */
function anchorsOf(file) {
  const anchors = new Set();
  const seen = new Map();
  for (const [, heading] of withoutCode(readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The text without fenced code blocks and inline code, where brackets and `#` lines are not Markdown. */
function withoutCode(text) {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, (code) => code.replace(/[[\]()#]/g, ' '));
}

function checkReadmeLength() {
  const lines = readFileSync('README.md', 'utf8').split('\n').length - 1;
  if (lines > README_MAX_LINES) problems.push(`README.md: ${lines} lines, more than ${README_MAX_LINES}`);
}

function checkNames(file) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      if (FORBIDDEN.test(line))
        problems.push(`${file}:${index + 1}: names a document outside the repository: ${line.trim()}`);
      if (CONFLICT_MARKER.test(line)) problems.push(`${file}:${index + 1}: a merge conflict's marker left behind`);
    });
}
