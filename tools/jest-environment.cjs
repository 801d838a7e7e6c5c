// The test environment of every tier: Node's, and a DeprecationWarning fails the test that caused
// it (issue 24.6: CI output carries no deprecation warnings; a pg one once showed two queries
// overlapping on one client). The environment runs outside the test's sandbox, so it listens on
// the worker's real process, where Node (util.deprecate, process.emitWarning) emits them.
// Node warns once per process for a code (DEP0xxx): a second file in the same worker may not see
// the same one again; the first has already failed. GRANULE_ALLOW_DEPRECATIONS=1 lets them pass
// (printed as before) while a dependency is being upgraded.
const { TestEnvironment } = require('jest-environment-node');

function describeWarnings(warnings) {
  return warnings.map((w) => `${w.code ? `${w.code}: ` : ''}${w.message}\n${w.stack ?? ''}`).join('\n');
}

class GranuleTestEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.deprecations = [];
    this.onWarning = (warning) => {
      if (warning?.name === 'DeprecationWarning' && process.env.GRANULE_ALLOW_DEPRECATIONS !== '1')
        this.deprecations.push(warning);
    };
  }

  async setup() {
    await super.setup();
    process.on('warning', this.onWarning);
  }

  async handleTestEvent(event) {
    if (event.name !== 'test_done') return;
    // Node emits a warning a tick after its cause: let the ones the test caused arrive.
    await new Promise((resolve) => setImmediate(resolve));
    if (this.deprecations.length > 0) {
      const warnings = this.deprecations.splice(0);
      event.test.errors.push(
        new Error(
          `this test caused ${warnings.length} DeprecationWarning(s); fix the call:\n${describeWarnings(warnings)}`,
        ),
      );
    }
  }

  async teardown() {
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', this.onWarning);
    await super.teardown();
    const warnings = this.deprecations.splice(0);
    if (warnings.length > 0)
      throw new Error(`a DeprecationWarning outside any test; fix the call:\n${describeWarnings(warnings)}`);
  }
}

module.exports = GranuleTestEnvironment;
