import { debugEnabled } from './cli-environment';
import { EXIT_OK, exitCodeFor, reportError, wantsJson } from './cli-error-handler';
import { fileSystemProblem } from './messages';
import { buildProgram } from './program';

async function main(argv: string[]): Promise<number> {
  // Under -o json an error is a JSON object on stderr too (same exit codes), so scripts parse both.
  const json = wantsJson(argv.slice(2));
  try {
    await buildProgram(argv[2], { json }).parseAsync(argv);
    return EXIT_OK;
  } catch (thrown) {
    const err = fileSystemProblem(thrown) ?? thrown;
    reportError(err, debugEnabled(), json);
    return exitCodeFor(err);
  }
}

// `granule plan ... | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv).then((code) => {
  // A command may have set a failing exit code itself (e.g. deploy --watch of a failed run).
  if (code !== 0 || process.exitCode === undefined) process.exitCode = code;
});
