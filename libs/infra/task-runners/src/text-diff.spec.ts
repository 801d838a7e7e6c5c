import { unifiedDiff } from './text-diff';

describe('unifiedDiff', () => {
  it('equal texts - no diff', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n', 'a/x', 'b/x')).toBe('');
  });

  it('changes far apart - one hunk each, with three lines of context', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n';
    const after = 'a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n';
    expect(unifiedDiff(before, after, 'a/x', 'b/x')).toBe(
      [
        '--- a/x',
        '+++ b/x',
        '@@ -1,5 +1,5 @@',
        ' a',
        '-b',
        '+B',
        ' c',
        ' d',
        ' e',
        '@@ -9,3 +9,4 @@',
        ' i',
        ' j',
        ' k',
        '+l',
        '',
      ].join('\n'),
    );
  });

  it('a new file - every line added, from line 0', () => {
    expect(unifiedDiff('', 'one\ntwo\n', '/dev/null', 'b/x')).toBe(
      '--- /dev/null\n+++ b/x\n@@ -0,0 +1,2 @@\n+one\n+two\n',
    );
  });

  it('a missing final newline - marked as diff -u does', () => {
    expect(unifiedDiff('old', 'old\n', 'a/x', 'b/x')).toBe(
      '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+old\n',
    );
  });
});
