import { GRANULE_VERSION } from '@granule/core';

/** Reported in the registration; Granule's version. */
export const AGENT_VERSION = GRANULE_VERSION;
