import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '@granule/core';

/** The script that builds the package (ADR 0027); `granule agent package` runs it. */
export const PACKAGE_SCRIPT = 'tools/package-agent.mjs';

/**
 * The checkout this CLI runs from: the first folder above `from` holding the packaging script
 * (dist/apps/cli/src/commands when built, apps/cli/src/commands in tests).
 */
export function findCheckout(from: string = __dirname): string | undefined {
  for (let dir = from; dir !== path.dirname(dir); dir = path.dirname(dir))
    if (existsSync(path.join(dir, PACKAGE_SCRIPT))) return dir;
  return undefined;
}

/** `granule agent package` — the installable agent package. */
export function registerAgentPackageCommand(program: Command): void {
  const agent =
    program.commands.find((c) => c.name() === 'agent') ??
    program.command('agent').description('node agents: credentials and packages');

  agent
    .command('package')
    .description(
      'build the installable node agent: one .tar.gz with the agent bundled into one file, the native spawn helper, install.sh, uninstall.sh and the systemd unit',
    )
    .option(
      '--out <dir|file>',
      'a directory (the file is named granule-agent-<version>-linux-<arch>.tar.gz) or a .tar.gz file',
      '.',
    )
    .addHelpText(
      'after',
      "\nRuns in a checkout of the repository with its dev dependencies (npm ci); deploy/node-agent/README.md\nsays how to install the package on a host.\n\nExample:\n  granule agent package --out /tmp\n  # on the host, with the node's credential (granule agent enroll web-01 --out web-01.creds):\n  # tar xzf granule-agent-0.1.0-linux-x64.tar.gz\n  # sudo granule-agent-0.1.0/install.sh --node-uid web-01 --nats-url nats://nats.example:4222 --creds web-01.creds",
    )
    .action((opts: { out: string }) => {
      const checkout = findCheckout();
      if (!checkout)
        throw new UsageError(
          `granule agent package runs in a checkout of the Granule repository (with npm ci): ${PACKAGE_SCRIPT} is not in any folder above ${__dirname}`,
        );
      const result = spawnSync(
        process.execPath,
        [path.join(checkout, PACKAGE_SCRIPT), '--out', path.resolve(opts.out)],
        {
          stdio: 'inherit',
        },
      );
      // The script printed its own message; its exit code is the command's.
      if (result.status !== 0) process.exitCode = result.status ?? 1;
    });
}
