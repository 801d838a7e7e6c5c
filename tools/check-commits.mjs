// Keeps commit messages to docs/CONTRIBUTING.md: a subject `area: what changed` of at most 72
// characters, a blank line, then a body that says why. Checks every commit after BASELINE (the
// last commit before the rule existed); older history is left as it was written.
import { execFileSync } from 'node:child_process';

const BASELINE = 'd780fc4a600df45f54f88aa79308c8c0e99036c4';
const MAX_SUBJECT = 72;
const SUBJECT = /^[a-z0-9][a-z0-9._/-]*(, ?[a-z0-9][a-z0-9._/-]*)*: \S/;

function git(...args) {
  return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

export function commitProblems(message) {
  const [subject = '', blank, ...rest] = message.replace(/\n+$/, '').split('\n');
  const problems = [];
  if (!SUBJECT.test(subject)) problems.push("subject is not 'area: what changed' (lowercase area, colon, space)");
  if (subject.length > MAX_SUBJECT) problems.push(`subject has ${subject.length} characters, at most ${MAX_SUBJECT}`);
  if (blank === undefined || rest.join('').trim() === '') problems.push('no body saying why');
  else if (blank.trim() !== '') problems.push('the line after the subject is not blank');
  return problems;
}

let range;
try {
  git('cat-file', '-e', `${BASELINE}^{commit}`);
  range = [`${BASELINE}..HEAD`];
} catch {
  range = ['--max-count=1', 'HEAD']; // a shallow clone without the baseline: the newest commit only
}
const ids = git('rev-list', '--no-merges', ...range)
  .split('\n')
  .filter(Boolean);
let bad = 0;
for (const id of ids) {
  const problems = commitProblems(git('log', '-1', '--format=%B', id));
  if (problems.length === 0) continue;
  bad += 1;
  const subject = git('log', '-1', '--format=%s', id).trim();
  console.error(`commit ${id.slice(0, 10)} "${subject}": ${problems.join('; ')}`);
}
if (bad > 0) {
  console.error(`${bad} commit message(s) do not follow docs/CONTRIBUTING.md`);
  process.exit(1);
}
