import { readText } from './packaging-files';

// The systemd unit of the agent package (deploy/node-agent/granule-agent.service, ADR 0027):
// the settings a root agent that runs puppet needs, and the hardening it can still have. The
// int test (agent-package.int.spec.ts) has systemd-analyze verify the unit install.sh renders.
const UNIT = 'deploy/node-agent/granule-agent.service';

/** `Key=value` lines of one section, in order (a key may repeat). */
function section(text: string, name: string): Array<[string, string]> {
  const lines = text.split('\n');
  const start = lines.indexOf(`[${name}]`);
  if (start < 0) return [];
  const out: Array<[string, string]> = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('[')) break;
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) out.push([m[1], m[2]]);
  }
  return out;
}

describe('granule-agent.service - the unit install.sh renders', () => {
  const text = readText(UNIT);
  const service = Object.fromEntries(section(text, 'Service'));

  it('runs the installed bundle with the Node.js install.sh checked, as root, with agent.env', () => {
    expect(service.ExecStart).toBe('@NODE@ /opt/granule-agent/current/app/node-agent.js');
    expect(service.EnvironmentFile).toBe('/etc/granule/agent.env');
    expect(service.User).toBe('root');
    expect(service.Type).toBe('simple');
  });

  it('has its state directory, a restart policy, KillMode and LimitNOFILE', () => {
    expect(service).toMatchObject({
      StateDirectory: 'granule-agent',
      StateDirectoryMode: '0700',
      WorkingDirectory: '/var/lib/granule-agent',
      Restart: 'on-failure',
      KillMode: 'mixed',
      KillSignal: 'SIGTERM',
    });
    expect(Number(service.RestartSec)).toBeGreaterThan(0);
    expect(Number(service.TimeoutStopSec)).toBeGreaterThan(5); // the agent's own grace for a task is 5 s
    expect(Number(service.LimitNOFILE)).toBeGreaterThanOrEqual(65536);
  });

  it('hardening puppet as root allows: PrivateTmp on, ProtectHome chosen at install, NoNewPrivileges off', () => {
    expect(service.PrivateTmp).toBe('yes');
    expect(service.ProtectHome).toBe('@PROTECT_HOME@');
    expect(service.NoNewPrivileges).toBe('no');
    // Puppet writes /etc, /usr and /var: a read-only system would break every manifest.
    expect(service.ProtectSystem).toBeUndefined();
  });

  it('starts after the network and is wanted by multi-user.target', () => {
    expect(Object.fromEntries(section(text, 'Unit'))).toMatchObject({
      After: 'network-online.target',
      Wants: 'network-online.target',
    });
    expect(Object.fromEntries(section(text, 'Install'))).toEqual({ WantedBy: 'multi-user.target' });
  });

  it('every placeholder is one install.sh fills in', () => {
    expect([...new Set(text.match(/@[A-Z_]+@/g))].sort()).toEqual(['@NODE@', '@PROTECT_HOME@']);
    const install = readText('deploy/node-agent/install.sh');
    for (const p of ['@NODE@', '@PROTECT_HOME@']) expect(install).toContain(`s|${p}|`);
  });
});
