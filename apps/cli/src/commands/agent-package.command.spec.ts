import path from 'node:path';
import { findCheckout, PACKAGE_SCRIPT } from './agent-package.command';

describe('granule agent package - finding the checkout it packages', () => {
  it('from the command (sources or dist/) - the repository root, which holds the packaging script', () => {
    const root = path.resolve(__dirname, '../../../..');
    expect(findCheckout(__dirname)).toBe(root);
    expect(findCheckout(path.join(root, 'dist/apps/cli/src/commands'))).toBe(root);
    expect(PACKAGE_SCRIPT).toBe('tools/package-agent.mjs');
  });

  it('outside any checkout (an installed CLI) - none, so the command says where it runs', () => {
    expect(findCheckout('/usr/lib/granule/dist/apps/cli/src/commands')).toBeUndefined();
  });
});
