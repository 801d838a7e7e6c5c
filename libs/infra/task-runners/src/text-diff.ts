/** Largest middle part (old lines × new lines, after the common start and end) compared line by line. */
const MAX_LCS_CELLS = 4_000_000;

type Op = { kind: ' ' | '-' | '+'; line: string };

function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  else lines[lines.length - 1] += '\n\\ No newline at end of file';
  return lines;
}

/** The edit script of `a` to `b`: the longest common subsequence of lines (a plain replace when too large). */
function editScript(a: string[], b: string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: Op[] = a.slice(0, start).map((line) => ({ kind: ' ', line }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  if (midA.length * midB.length > MAX_LCS_CELLS) {
    for (const line of midA) ops.push({ kind: '-', line });
    for (const line of midB) ops.push({ kind: '+', line });
  } else {
    // lcs[i][j]: common lines of midA[i..] and midB[j..]
    const w = midB.length + 1;
    const lcs = new Uint32Array((midA.length + 1) * w);
    for (let i = midA.length - 1; i >= 0; i--)
      for (let j = midB.length - 1; j >= 0; j--)
        lcs[i * w + j] =
          midA[i] === midB[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    let i = 0;
    let j = 0;
    while (i < midA.length || j < midB.length) {
      if (i < midA.length && j < midB.length && midA[i] === midB[j]) {
        ops.push({ kind: ' ', line: midA[i++] });
        j++;
      } else if (i < midA.length && (j === midB.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        ops.push({ kind: '-', line: midA[i++] });
      } else ops.push({ kind: '+', line: midB[j++] });
    }
  }
  for (const line of a.slice(endA)) ops.push({ kind: ' ', line });
  return ops;
}

/**
 * A unified diff (`diff -u` style, `context` lines around each change) of two texts, headed
 * `--- oldLabel` / `+++ newLabel`; empty when they are equal.
 */
export function unifiedDiff(oldText: string, newText: string, oldLabel: string, newLabel: string, context = 3): string {
  if (oldText === newText) return '';
  const ops = editScript(linesOf(oldText), linesOf(newText));
  const out = [`--- ${oldLabel}`, `+++ ${newLabel}`];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k].kind === ' ') k++;
    if (k === ops.length) break;
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is no more than 2 × context unchanged lines from the next.
    const from = Math.max(0, k - context);
    let to = k;
    for (;;) {
      while (to < ops.length && ops[to].kind !== ' ') to++;
      let gap = to;
      while (gap < ops.length && ops[gap].kind === ' ') gap++;
      if (gap < ops.length && gap - to <= 2 * context) to = gap;
      else {
        to = Math.min(ops.length, to + context);
        break;
      }
    }
    let oldLine = 1;
    let newLine = 1;
    for (let q = 0; q < from; q++) {
      if (ops[q].kind !== '+') oldLine++;
      if (ops[q].kind !== '-') newLine++;
    }
    const hunk = ops.slice(from, to);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    const range = (line: number, count: number): string =>
      count === 1 ? `${line}` : `${count === 0 ? line - 1 : line},${count}`;
    out.push(`@@ -${range(oldLine, oldCount)} +${range(newLine, newCount)} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k = to;
  }
  return `${out.join('\n')}\n`;
}
