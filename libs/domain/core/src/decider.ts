/**
 * A business process as pure functions (emmett's Decider): `decide` turns a command into events
 * given the state, `evolve` folds an event into the state. `context` is what the process needs
 * besides its events (a deployment run's plan, read from the plan store); it never changes what
 * a stream's events mean, only makes them readable. One driver (run-coordination) runs every
 * decider: the same evolve serves the driver, recovery and every query that folds a stream.
 */
export interface Decider<S, C, E, X = undefined> {
  initialState(streamId: string): S;
  decide(state: S, command: C, context: X): E[];
  evolve(state: S, event: E, context: X): S;
  /** The stream has ended: its driver lets go of it. */
  isEnded(state: S): boolean;
}

/** Folds `events` into a fresh state of `streamId` with the decider's own evolve. */
export function foldWith<S, C, E, X>(
  decider: Decider<S, C, E, X>,
  streamId: string,
  events: readonly E[],
  context: X,
): S {
  let state = decider.initialState(streamId);
  for (const e of events) state = decider.evolve(state, e, context);
  return state;
}
