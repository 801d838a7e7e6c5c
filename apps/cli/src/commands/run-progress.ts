import { MultiBar, Presets } from 'cli-progress';
import type { SingleBar } from 'cli-progress';
import type { RunSummary } from '@granule/contracts';

/** Task instances of a summary that have an outcome (done, failed or skipped). */
export function finishedCount(s: RunSummary): number {
  const t = s.totals;
  return t.succeeded + t.failed + t.skipped + t.dep_failed + t.timed_out + t.not_in_run;
}

export function totalCount(s: RunSummary): number {
  return Object.values(s.totals).reduce((a, b) => a + b, 0);
}

// The bars count these; every other event (each failure, a node gone offline, a refused
// dispatch, a stop, the end, and event types added later) is printed above them.
const COUNTED_BY_THE_BARS = new Set(['TaskDispatched', 'TaskStarted', 'TaskSucceeded', 'TaskSkipped']);

/**
 * Whether a watch line (`describeEvent`'s, maybe indented for a phase run) is printed above the
 * bars on a terminal. A line that is no event (the watch's own notices) always is.
 */
export function showsAboveBars(line: string): boolean {
  const event = /^\s*\d\d:\d\d:\d\d\s+#\d+\s+([A-Za-z]+)/.exec(line);
  return !event || !COUNTED_BY_THE_BARS.has(event[1]);
}

/**
 * Live progress on a terminal: an overall bar, a bar per strategy group (nodes done of the
 * group's nodes) or per node, the tasks running now, and failures printed above as they come.
 */
export class RunProgress {
  private readonly bars = new MultiBar(
    {
      format: '{label} |{bar}| {value}/{total} {info}',
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      barsize: 30,
      autopadding: true,
    },
    Presets.shades_classic,
  );
  private readonly rows = new Map<string, SingleBar>();
  private readonly running: SingleBar;

  constructor() {
    this.running = this.bars.create(0, 0, { label: 'running', info: '' }, { format: '{label} {info}' });
  }

  /** A line above the bars (failures, phase changes). */
  log(line: string): void {
    this.bars.log(`${line}\n`);
  }

  update(summary: RunSummary): void {
    this.row('overall', totalCount(summary), finishedCount(summary), summary.phase);
    if (summary.strategy) {
      for (const g of summary.strategy.groups) {
        const done = g.status === 'DEPLOYED' || g.status === 'FAILED' ? 1 : 0;
        this.row(`group ${g.name}`, 1, done, `${g.status.toLowerCase()}${g.critical ? ' (critical)' : ''}`);
      }
    } else {
      for (const [node, c] of Object.entries(summary.nodes)) {
        const total = Object.entries(c).reduce((a, [k, v]) => a + (k === 'failedNode' ? 0 : (v as number)), 0);
        const done = total - c.pending - c.dispatched - c.running;
        this.row(`node ${node}`, total, done, c.failedNode ? 'FAILED' : '');
      }
    }
    const now = summary.running.slice(0, 6).join(', ');
    this.running.update(0, { info: now + (summary.running.length > 6 ? ` (+${summary.running.length - 6})` : '') });
  }

  stop(): void {
    this.bars.stop();
  }

  private row(label: string, total: number, value: number, info: string): void {
    let bar = this.rows.get(label);
    if (!bar) {
      bar = this.bars.create(total, value, { label, info });
      this.rows.set(label, bar);
    }
    bar.setTotal(total);
    bar.update(value, { label, info });
  }
}
