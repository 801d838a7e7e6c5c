// The e2e tier's default test timeout (a test that sets its own keeps it; see jest.config.js).
jest.setTimeout(30_000);
