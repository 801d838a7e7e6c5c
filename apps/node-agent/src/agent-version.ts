/** Reported in the registration; follows the repository's package version. */
export const AGENT_VERSION = '0.1.0';
