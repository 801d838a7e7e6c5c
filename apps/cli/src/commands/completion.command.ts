import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import { helpExamples } from '../messages';

const SHELLS = ['bash', 'zsh'] as const;

/** Every command path (`granule`, `granule runs`, `granule runs show`) with the words that may follow it: subcommands and options. */
export function completionWords(program: Command): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const visit = (cmd: Command, path: string): void => {
    const words = [
      ...cmd.commands.map((c) => c.name()),
      ...cmd.options.flatMap((o) => [o.short, o.long].filter((f): f is string => f !== undefined)),
      '--help',
    ];
    out.set(path, [...new Set(words)]);
    for (const sub of cmd.commands) visit(sub, `${path} ${sub.name()}`);
  };
  visit(program, 'granule');
  return out;
}

/**
 * A bash completion script for `granule` and `./granule`: the command path typed so far picks
 * the words offered (subcommands and options); arguments complete as file names. zsh runs it
 * through bashcompinit.
 */
export function completionScript(program: Command, shell: (typeof SHELLS)[number]): string {
  const entries = [...completionWords(program)]
    .map(([path, words]) => `  [${JSON.stringify(path)}]=${JSON.stringify(words.join(' '))}`)
    .join('\n');
  const bash = `# granule shell completion (granule completion ${shell})
_granule_complete() {
  local cur=\${COMP_WORDS[COMP_CWORD]} path=granule w i
  declare -A words=(
${entries}
  )
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    [[ -n \${words["$path $w"]+x} ]] && path="$path $w"
  done
  COMPREPLY=($(compgen -W "\${words[$path]}" -- "$cur"))
}
complete -o default -F _granule_complete granule ./granule
`;
  return shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${bash}` : bash;
}

/** `granule completion bash|zsh` — prints the shell completion script. */
export function registerCompletionCommand(program: Command): void {
  program
    .command('completion')
    .description('print a shell completion script for granule (bash or zsh)')
    .argument('<shell>', SHELLS.join(' | '))
    .addHelpText(
      'after',
      helpExamples(
        'granule completion bash > /etc/bash_completion.d/granule',
        '# or, for this shell only: source <(granule completion bash)',
        'granule completion zsh > "${fpath[1]}/_granule"',
      ),
    )
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell))
        throw new UsageError(`completion: expected a shell, one of ${SHELLS.join(', ')}, got ${JSON.stringify(shell)}`);
      // Every command, not only this one's group: the script offers them all.
      const { buildProgram } = require('../program') as typeof import('../program');
      process.stdout.write(completionScript(buildProgram(), shell as (typeof SHELLS)[number]));
    });
}
