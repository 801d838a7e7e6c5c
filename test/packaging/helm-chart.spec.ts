import { readdirSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_HEALTH_PORTS } from '@granule/observability';
import { ROOT, helmBinary, readText, runHelm, variablesRead } from './packaging-files';

// helm/granule, rendered and linted by the real helm (pinned: tools/helm.mjs), then checked
// object by object. A few static checks of the sources stay where helm says nothing.

const CHART = 'helm/granule';
const EVERY_OPTION = 'test/packaging/fixtures/helm-values-every-option.yaml';
const helm = helmBinary();

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; fieldRef?: { fieldPath: string } };
  }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string; port: string } };
  readinessProbe?: { httpGet?: { path: string; port: string } };
}
interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: { name: string };
  emptyDir?: Record<string, unknown>;
}
interface PodSpec {
  containers: Container[];
  volumes?: Volume[];
  securityContext?: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: {
    template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
    podSelector?: { matchLabels?: Record<string, string> };
    policyTypes?: string[];
    ingress?: { from?: unknown[]; ports?: { port: number }[] }[];
    egress?: { to?: unknown[]; ports?: { port: number; protocol: string }[] }[];
  };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** `helm template` of the chart (release `granule`) with these extra arguments; throws on failure. */
function render(...args: string[]): K8sObject[] {
  const r = runHelm(helm, ['template', 'granule', CHART, '--namespace', 'granule', ...args]);
  if (r.status !== 0) throw new Error(`helm template ${args.join(' ')} failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** `helm template` expected to fail: its error output. */
function refusal(...args: string[]): string {
  const r = runHelm(helm, ['template', 'granule', CHART, ...args]);
  expect(r.status).not.toBe(0);
  return r.stderr;
}

const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const named = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found)
    throw new Error(`no ${kind} ${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
};
const workloads = (objects: K8sObject[]) =>
  objects.filter((o) => ['Deployment', 'StatefulSet', 'Job'].includes(o.kind));
const podOf = (o: K8sObject): PodSpec => o.spec?.template?.spec as PodSpec;
const envOf = (c: Container) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));

/** Service Deployment → the app it runs and its key in values.yaml. */
const SERVICES = {
  'granule-config-store': { app: 'config-store', key: 'configStore' },
  'granule-graph-planner': { app: 'graph-planner', key: 'graphPlanner' },
  'granule-orchestrator': { app: 'orchestrator', key: 'orchestrator' },
} as const;
type ServiceName = keyof typeof SERVICES;

const defaults = render();
const full = render('-f', EVERY_OPTION);
const values = parse(readText(`${CHART}/values.yaml`)) as Record<string, unknown>;
const fullValues = parse(readText(EVERY_OPTION)) as {
  secrets: { name: string; values: Record<string, string> };
  nats: { credentials: Record<string, { secretName: string; key: string }> };
};

describe('helm/granule with the real helm', () => {
  it('helm lint --strict passes with the default values and with every option set, without a warning', () => {
    for (const args of [[], ['-f', EVERY_OPTION]]) {
      const r = runHelm(helm, ['lint', '--strict', CHART, ...args]);
      expect([args, r.status, r.stdout + r.stderr]).toEqual([args, 0, expect.stringContaining('0 chart(s) failed')]);
      expect((r.stdout + r.stderr).match(/\[(WARNING|ERROR)\].*|level=WARN.*/g)).toBeNull();
    }
  });

  it('renders the services, their Services, the migration Job and NetworkPolicies; a Secret and NATS only when asked', () => {
    const kinds = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(kinds(defaults)).toEqual([
      'ConfigMap/granule',
      'Deployment/granule-config-store',
      'Deployment/granule-graph-planner',
      'Deployment/granule-orchestrator',
      'Job/granule-migrate',
      'NetworkPolicy/granule-config-store',
      'NetworkPolicy/granule-graph-planner',
      'NetworkPolicy/granule-migrate',
      'NetworkPolicy/granule-orchestrator',
      'Service/granule-config-store',
      'Service/granule-graph-planner',
      'Service/granule-orchestrator',
    ]);
    expect(kinds(full)).toEqual(
      [
        ...kinds(defaults),
        'ConfigMap/granule-nats',
        'NetworkPolicy/granule-nats',
        'Secret/granule-migrate',
        'Secret/granule-prod-env',
        'Service/granule-nats',
        'Service/granule-nats-headless',
        'StatefulSet/granule-nats',
      ].sort(),
    );
  });

  it('every credential reaches the pods from a Secret: none is in a ConfigMap, an env value or an annotation', () => {
    const secretValues = Object.values(fullValues.secrets.values);
    const outsideSecrets = JSON.stringify(full.filter((o) => o.kind !== 'Secret'));
    expect(secretValues.filter((v) => outsideSecrets.includes(v))).toEqual([]);
    const written = named(full, 'Secret', 'granule-prod-env').stringData;
    expect(Object.keys(written ?? {}).sort()).toEqual([
      'GRANULE_AGENT_TOKEN',
      'GRANULE_API_TOKEN',
      'GRANULE_DATABASE_URL',
      'GRANULE_REDIS_URL',
      'GRANULE_SECRETS_KEY',
    ]);
    expect(written?.GRANULE_REDIS_URL).toBe('redis://:redis-password@redis.example.com:6379');
    // Which variable each service takes from the Secret, and which it may go without.
    const fromSecret = (objects: K8sObject[], secret: string) =>
      Object.fromEntries(
        (Object.keys(SERVICES) as ServiceName[]).map((name) => [
          name,
          podOf(named(objects, 'Deployment', name))
            .containers[0].env?.filter((e) => e.valueFrom?.secretKeyRef)
            .map((e) => {
              const ref = e.valueFrom?.secretKeyRef;
              expect([e.name, ref?.name, ref?.key]).toEqual([e.name, secret, e.name]);
              return `${e.name}${ref?.optional ? '?' : ''}`;
            }),
        ]),
      );
    const expected = {
      'granule-config-store': ['GRANULE_DATABASE_URL', 'GRANULE_API_TOKEN'],
      'granule-graph-planner': ['GRANULE_DATABASE_URL'],
      'granule-orchestrator': [
        'GRANULE_DATABASE_URL',
        'GRANULE_REDIS_URL',
        'GRANULE_SECRETS_KEY?',
        'GRANULE_AGENT_TOKEN?',
      ],
    };
    expect(fromSecret(defaults, 'granule-env')).toEqual(expected);
    expect(fromSecret(full, 'granule-prod-env')).toEqual(expected);
    expect(Object.keys(named(defaults, 'ConfigMap', 'granule').data ?? {})).toEqual([
      'GRANULE_NATS_URL',
      'GRANULE_SUBJECT_PREFIX',
    ]);
  });

  it('secrets.create without a database or Redis URL is refused, naming the value', () => {
    expect(refusal('--set', 'secrets.create=true', '--set', 'secrets.values.redisUrl=redis://:pw@r:6379')).toContain(
      'secrets.values.databaseUrl is required with secrets.create',
    );
    expect(
      refusal('--set', 'secrets.create=true', '--set', 'secrets.values.databaseUrl=postgres://u:p@db/g'),
    ).toContain('secrets.values.redisUrl is required with secrets.create');
    // The config-store listens beyond loopback in a pod: without a token it would refuse to start.
    expect(
      refusal(
        '--set',
        'secrets.create=true',
        '--set',
        'secrets.values.databaseUrl=postgres://u:p@db/g',
        '--set',
        'secrets.values.redisUrl=redis://:pw@r:6379',
      ),
    ).toContain('secrets.values.apiToken is required with secrets.create');
  });

  it('a Redis URL without a password is refused: Redis takes one for every service (issue 20)', () => {
    for (const url of ['redis://redis.example.com:6379', 'redis://user@redis.example.com:6379', 'rediss://:@r:6379'])
      expect([url, refusal('--set', `secrets.values.redisUrl=${url}`)]).toEqual([
        url,
        expect.stringContaining('/secrets/values/redisUrl'),
      ]);
    for (const url of ['redis://:pw@r:6379', 'redis://granule:pw@r:6379/0', 'rediss://:pw@r.example.com:6380'])
      expect([
        url,
        runHelm(helm, ['template', 'granule', CHART, '--set', `secrets.values.redisUrl=${url}`]).status,
      ]).toEqual([url, 0]);
  });

  it('each pod mounts only its own .creds, read-only, and GRANULE_NATS_CREDS names that file', () => {
    for (const [objects, secretOf] of [
      [
        defaults,
        (key: string) => ({ secretName: 'granule-nats-creds', key: `${SERVICES[key as ServiceName].app}.creds` }),
      ],
      [full, (key: string) => fullValues.nats.credentials[SERVICES[key as ServiceName].key]],
    ] as const) {
      for (const name of Object.keys(SERVICES)) {
        const pod = podOf(named(objects, 'Deployment', name));
        const creds = pod.volumes?.find((v) => v.name === 'nats-creds');
        const { secretName, key } = secretOf(name);
        expect([name, creds?.secret]).toEqual([
          name,
          expect.objectContaining({ secretName, items: [{ key, path: 'nats.creds' }] }),
        ]);
        const container = pod.containers[0];
        expect([name, container.volumeMounts?.find((m) => m.name === 'nats-creds')]).toEqual([
          name,
          { name: 'nats-creds', mountPath: '/etc/granule/nats', readOnly: true },
        ]);
        expect([name, envOf(container).GRANULE_NATS_CREDS?.value]).toEqual([name, '/etc/granule/nats/nats.creds']);
      }
    }
  });

  it('every file a GRANULE_NATS_* variable names is mounted from the Secret that holds it', () => {
    for (const objects of [defaults, full]) {
      for (const name of Object.keys(SERVICES)) {
        const pod = podOf(named(objects, 'Deployment', name));
        const container = pod.containers[0];
        const files = (container.volumeMounts ?? []).flatMap((m) =>
          (pod.volumes?.find((v) => v.name === m.name)?.secret?.items ?? []).map((i) => `${m.mountPath}/${i.path}`),
        );
        const fileVars = (container.env ?? []).filter((e) => /^GRANULE_NATS_(CREDS|TLS_)/.test(e.name));
        for (const e of fileVars) expect([name, e.name, files.includes(e.value ?? '')]).toEqual([name, e.name, true]);
        expect(fileVars.length).toBe(objects === full ? 4 : 1);
      }
    }
    const orchestrator = envOf(podOf(named(full, 'Deployment', 'granule-orchestrator')).containers[0]);
    expect([orchestrator.GRANULE_NATS_TLS_CA?.value, orchestrator.GRANULE_NATS_TLS_KEY?.value]).toEqual([
      '/etc/granule/nats-tls/ca.crt',
      '/etc/granule/nats-tls/tls.key',
    ]);
  });

  it('an existing NATS: its URL, and a service whose secretName is empty connects without credentials', () => {
    const objects = render(
      '--set',
      'nats.url=tls://nats-a.example.com:4222\\,tls://nats-b.example.com:4222',
      '--set',
      'nats.credentials.graphPlanner.secretName=',
    );
    expect(named(objects, 'ConfigMap', 'granule').data?.GRANULE_NATS_URL).toBe(
      'tls://nats-a.example.com:4222,tls://nats-b.example.com:4222',
    );
    const planner = podOf(named(objects, 'Deployment', 'granule-graph-planner'));
    expect([planner.volumes?.map((v) => v.name), envOf(planner.containers[0]).GRANULE_NATS_CREDS]).toEqual([
      ['tmp'],
      undefined,
    ]);
    expect(
      envOf(podOf(named(objects, 'Deployment', 'granule-orchestrator')).containers[0]).GRANULE_NATS_CREDS,
    ).toBeDefined();
  });

  it("the chart's own NATS keeps JetStream (and so the packages' artifacts) on a volume of storageSize", () => {
    // Installed packages' deployment files live in the JetStream object store <P>_ARTIFACTS
    // (file storage, ADR 0026): the file store must be a persistent volume, not the container's disk.
    const objects = render('--set', 'nats.server.enabled=true', '--set', 'nats.server.jetstream.storageSize=37Gi');
    const conf = named(objects, 'ConfigMap', 'granule-nats').data?.['nats.conf'] ?? '';
    expect(conf).toMatch(/jetstream \{\n\s+store_dir: \/data\n/);
    const sts = named(objects, 'StatefulSet', 'granule-nats');
    const nats = podOf(sts).containers.find((c) => c.name === 'nats');
    expect(nats?.volumeMounts?.find((m) => m.mountPath === '/data')).toEqual({ name: 'data', mountPath: '/data' });
    const claims = (sts.spec as { volumeClaimTemplates?: K8sObject[] }).volumeClaimTemplates ?? [];
    expect(claims.map((c) => [c.metadata.name, c.spec])).toEqual([
      ['data', expect.objectContaining({ resources: { requests: { storage: '37Gi' } } })],
    ]);
    expect(podOf(sts).volumes?.some((v) => v.name === 'data')).toBe(false);
  });

  it("the chart's own NATS includes the trust store's nats-auth.conf and nothing else from it; the services use it", () => {
    const conf = named(full, 'ConfigMap', 'granule-nats').data?.['nats.conf'] ?? '';
    expect(conf).toMatch(/^include \.\.\/auth\/nats-auth\.conf$/m);
    expect(conf).toMatch(/jetstream \{\n\s+store_dir: \/data/);
    expect(conf).toMatch(/tls \{[^}]*verify: true/);
    const pod = podOf(named(full, 'StatefulSet', 'granule-nats'));
    const secrets = pod.volumes?.filter((v) => v.secret).map((v) => [v.name, v.secret?.secretName, v.secret?.items]);
    expect(secrets).toEqual([
      ['auth', 'prod-nats-auth', [{ key: 'server-auth.conf', path: 'nats-auth.conf' }]],
      [
        'tls',
        'prod-nats-server-tls',
        [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
          { key: 'ca.crt', path: 'ca.crt' },
        ],
      ],
    ]);
    const nats = pod.containers.find((c) => c.name === 'nats');
    expect(nats?.command).toEqual(['nats-server', '--config', '/etc/nats/config/nats.conf']);
    expect(nats?.volumeMounts?.filter((m) => ['config', 'auth'].includes(m.name)).map((m) => m.mountPath)).toEqual([
      '/etc/nats/config',
      '/etc/nats/auth',
    ]);
    // The reloader applies a new nats-auth.conf (a revocation) by signalling nats-server.
    expect(pod.containers.find((c) => c.name === 'reloader')?.args).toEqual([
      '-pid',
      '/var/run/nats/nats.pid',
      '-config',
      '/etc/nats/config/nats.conf',
      '-config',
      '/etc/nats/auth/nats-auth.conf',
    ]);
    expect(named(full, 'ConfigMap', 'granule').data?.GRANULE_NATS_URL).toBe('tls://granule-nats:4223');
    expect(named(render('--set', 'nats.server.enabled=true'), 'ConfigMap', 'granule').data?.GRANULE_NATS_URL).toBe(
      'nats://granule-nats:4222',
    );
  });

  it("the chart's NATS cannot run without authorization", () => {
    expect(refusal('--set', 'nats.server.enabled=true', '--set', 'nats.server.auth.secretName=')).toMatch(
      /\/nats\/server\/auth\/secretName/,
    );
  });

  it('every pod: RuntimeDefault seccomp, non-root, no privilege escalation, read-only root, no service account token', () => {
    for (const objects of [defaults, full]) {
      for (const w of workloads(objects)) {
        const pod = podOf(w);
        expect([w.metadata.name, pod.securityContext?.runAsNonRoot, pod.securityContext?.seccompProfile]).toEqual([
          w.metadata.name,
          true,
          { type: 'RuntimeDefault' },
        ]);
        expect([w.metadata.name, pod.automountServiceAccountToken]).toEqual([w.metadata.name, false]);
        for (const c of pod.containers)
          expect([w.metadata.name, c.name, c.securityContext]).toEqual([
            w.metadata.name,
            c.name,
            expect.objectContaining({
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              privileged: false,
              capabilities: { drop: ['ALL'] },
            }),
          ]);
      }
    }
    expect(refusal('--set', 'podSecurityContext.runAsNonRoot=false')).toMatch(/\/podSecurityContext\/runAsNonRoot/);
    expect(refusal('--set', 'securityContext.allowPrivilegeEscalation=true')).toMatch(
      /\/securityContext\/allowPrivilegeEscalation/,
    );
  });

  it('a changed Secret, ConfigMap or rolloutToken changes the pod checksums (the pods roll); nothing else does', () => {
    const checksums = (objects: K8sObject[]) =>
      workloads(objects)
        .filter((w) => w.kind !== 'Job')
        .map((w) => w.spec?.template?.metadata?.annotations ?? {})
        .map((a) => [a['checksum/config'], a['checksum/secrets']]);
    const base = ['-f', EVERY_OPTION];
    const before = checksums(full);
    expect(checksums(render(...base))).toEqual(before);
    const changed = (...args: string[]) => checksums(render(...base, ...args));
    const [secret, token, config] = [
      changed('--set', 'secrets.values.redisUrl=redis://:another-password@redis.example.com:6379'),
      changed('--set', 'secrets.rolloutToken=2026-11-26'),
      changed('--set', 'subjectPrefix=staging'),
    ];
    for (let i = 0; i < 3; i++) {
      expect([i, secret[i][0], secret[i][1] === before[i][1]]).toEqual([i, before[i][0], false]);
      expect([i, token[i][1] === before[i][1]]).toEqual([i, false]);
      expect([i, config[i][0] === before[i][0]]).toEqual([i, false]);
    }
    // The NATS server's checksum follows its configuration and the rollout token only.
    expect(token[3][0] === before[3][0]).toBe(false);
  });

  it("NetworkPolicies: each component's ingress only from its peers, egress only to DNS and what it uses", () => {
    const policy = (objects: K8sObject[], name: string) => named(objects, 'NetworkPolicy', name).spec;
    const ports = (rules: { ports?: { port: number }[] }[] | undefined) =>
      (rules ?? []).map((r) => (r.ports ?? []).map((p) => p.port));
    expect(
      Object.fromEntries(
        ['config-store', 'graph-planner', 'orchestrator', 'migrate'].map((c) => {
          const spec = policy(defaults, `granule-${c}`);
          expect([c, spec?.policyTypes]).toEqual([c, ['Ingress', 'Egress']]);
          return [c, { ingress: ports(spec?.ingress), egress: ports(spec?.egress) }];
        }),
      ),
    ).toEqual({
      'config-store': { ingress: [[8410], [8411]], egress: [[53, 53], [4222], [5432]] },
      'graph-planner': { ingress: [[8412]], egress: [[53, 53], [4222], [5432]] },
      orchestrator: { ingress: [[8413]], egress: [[53, 53], [4222], [5432], [6379]] },
      migrate: { ingress: [], egress: [[53, 53], [5432]] },
    });
    expect(policy(defaults, 'granule-config-store')?.ingress?.[0].from).toEqual([{ podSelector: {} }]);
    // With every option: peers as given; the services reach the chart's NATS pods only.
    const orchestrator = policy(full, 'granule-orchestrator');
    expect(orchestrator?.egress?.map((r) => r.to)).toEqual([
      [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
      [
        {
          podSelector: {
            matchLabels: {
              'app.kubernetes.io/name': 'granule',
              'app.kubernetes.io/instance': 'granule',
              'app.kubernetes.io/component': 'nats',
            },
          },
        },
      ],
      [{ ipBlock: { cidr: '198.51.100.20/32' } }],
      [{ ipBlock: { cidr: '198.51.100.30/32' } }],
    ]);
    expect(ports(orchestrator?.egress)).toEqual([[53, 53], [4223], [5432, 6432], [6379]]);
    const nats = policy(full, 'granule-nats');
    expect([ports(nats?.ingress), nats?.ingress?.[0].from?.length, nats?.egress]).toEqual([[[4223], [8223]], 2, []]);
    expect(byKind(render('--set', 'networkPolicy.enabled=false'), 'NetworkPolicy')).toEqual([]);
  });

  it('every pod the chart runs is selected by one of its NetworkPolicies', () => {
    for (const objects of [defaults, full]) {
      const selectors = byKind(objects, 'NetworkPolicy').map((p) => p.spec?.podSelector?.matchLabels ?? {});
      for (const w of workloads(objects)) {
        const labels = w.spec?.template?.metadata?.labels ?? {};
        const selected = selectors.some((s) => Object.entries(s).every(([k, v]) => labels[k] === v));
        expect([w.metadata.name, selected]).toEqual([w.metadata.name, true]);
      }
    }
  });

  it('the schema refuses bad values, naming each one', () => {
    const err = refusal(
      '--set',
      'orchestrator.replicas=two',
      '--set',
      'secrets.values.redisUrl=localhost:6379',
      '--set',
      'secrets.values.apiToken=short',
      '--set',
      'configStore.extra=true',
      '--set',
      'networkPolicy.egress.redis.ports={}',
    );
    for (const at of [
      '/orchestrator/replicas',
      '/secrets/values/redisUrl',
      '/secrets/values/apiToken',
      "additional properties 'extra'",
      '/networkPolicy/egress/redis/ports',
    ])
      expect([at, err.includes(at)]).toEqual([at, true]);
  });

  it("each Deployment sets only GRANULE_* variables its service reads, and health ports default to the services' own", () => {
    const unread: string[] = [];
    const configMap = Object.keys(named(full, 'ConfigMap', 'granule').data ?? {});
    for (const [name, { app, key }] of Object.entries(SERVICES)) {
      const read = variablesRead(app);
      const set = podOf(named(full, 'Deployment', name)).containers[0].env?.map((e) => e.name) ?? [];
      for (const v of [...set, ...configMap]) if (!read.includes(v)) unread.push(`${name}: ${v}`);
      expect([app, (values[key] as { healthPort: number }).healthPort]).toEqual([app, DEFAULT_HEALTH_PORTS[app]]);
    }
    expect(unread).toEqual([]);
  });

  it('probes: /healthz (liveness) and /readyz (readiness) on the health port, 2 replicas by default', () => {
    for (const name of Object.keys(SERVICES)) {
      const deployment = named(defaults, 'Deployment', name) as K8sObject & { spec: { replicas: number } };
      const c = podOf(deployment).containers[0];
      expect([name, deployment.spec.replicas, c.livenessProbe?.httpGet, c.readinessProbe?.httpGet]).toEqual([
        name,
        2,
        { path: '/healthz', port: 'health' },
        { path: '/readyz', port: 'health' },
      ]);
      expect(c.ports?.find((p) => p.name === 'health')?.containerPort).toBe(
        DEFAULT_HEALTH_PORTS[SERVICES[name as ServiceName].app],
      );
    }
  });

  it('the migration Job is a pre-install/pre-upgrade hook running migrate.js with the config-store image', () => {
    for (const [objects, secret] of [
      [defaults, 'granule-env'],
      [full, 'granule-migrate'],
    ] as const) {
      const job = named(objects, 'Job', 'granule-migrate');
      expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      const c = podOf(job).containers[0];
      expect([c.command, c.image.split('/').pop()?.split(':')[0]]).toEqual([
        ['node', 'dist/apps/config-store/src/migrate.js'],
        'config-store',
      ]);
      expect(envOf(c).GRANULE_DATABASE_URL.valueFrom?.secretKeyRef?.name).toBe(secret);
    }
    // With secrets.create the Job reads a hook Secret created before it (hooks run before the release's objects).
    const hookSecret = named(full, 'Secret', 'granule-migrate');
    expect(Number(hookSecret.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(
      Number(named(full, 'Job', 'granule-migrate').metadata.annotations?.['helm.sh/hook-weight']),
    );
  });

  it('the orchestrator names each replica after its pod (the run lease holder)', () => {
    const env = envOf(podOf(named(defaults, 'Deployment', 'granule-orchestrator')).containers[0]);
    expect(env.GRANULE_INSTANCE_ID.valueFrom?.fieldRef).toEqual({ fieldPath: 'metadata.name' });
  });
});

describe('helm/granule sources', () => {
  const templateNames = readdirSync(path.join(ROOT, CHART, 'templates')).sort();
  const templates = Object.fromEntries(templateNames.map((n) => [n, readText(`${CHART}/templates/${n}`)]));
  /** `.Values.a.b` paths a template reads (also through `$.Values` and `.root.Values`). */
  const valuePaths = (text: string): string[] =>
    [...new Set([...text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)].map((m) => m[1].slice(1)))].sort();
  const hasPath = (tree: unknown, dotted: string): boolean => {
    let node = tree;
    for (const key of dotted.split('.')) {
      if (node === null || typeof node !== 'object' || !(key in node)) return false;
      node = (node as Record<string, unknown>)[key];
    }
    return true;
  };

  it('Chart.yaml is a v2 application chart with a semver version', () => {
    const chart = parse(readText(`${CHART}/Chart.yaml`)) as Record<string, unknown>;
    expect([chart.apiVersion, chart.name, chart.type]).toEqual(['v2', 'granule', 'application']);
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('every .Values path a template reads exists in values.yaml (helm renders a missing one as empty)', () => {
    const missing = templateNames.flatMap((name) =>
      valuePaths(templates[name])
        .filter((p) => !hasPath(values, p))
        .map((p) => `${name}: .Values.${p}`),
    );
    expect(missing).toEqual([]);
  });

  it('every value in values.yaml is read by some template (no dead settings)', () => {
    const all = Object.values(templates).join('\n');
    const read = new Set(valuePaths(all));
    // `with` blocks read the fields of their value as `.field`: count the block's fields as read.
    const withBlocks = [...all.matchAll(/\{\{-? with \$?\.Values\.([\w.]+) \}\}([\s\S]*?)\{\{-? end \}\}/g)];
    for (const [, at, body] of withBlocks)
      for (const m of body.matchAll(/\{\{[^}]*?\s\.(\w+)/g)) read.add(`${at}.${m[1]}`);
    const aliases = [...all.matchAll(/\{\{-? \$(\w+) := \.Values\.([\w.]+) \}\}/g)];
    for (const [, alias, at] of aliases)
      for (const m of all.matchAll(new RegExp(`\\$${alias}((?:\\.\\w+)+)`, 'g'))) read.add(`${at}${m[1]}`);
    for (const m of all.matchAll(/\.credentials\.(\w+)/g)) read.add(`nats.credentials.${m[1]}`);
    const leaves: string[] = [];
    const walk = (node: unknown, at: string): void => {
      // Maps handed to toYaml or include whole count as read when their parent is.
      if (read.has(at)) return;
      if (node !== null && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length > 0) {
        for (const [k, v] of Object.entries(node)) walk(v, at ? `${at}.${k}` : k);
      } else leaves.push(at);
    };
    walk(values, '');
    expect(leaves).toEqual([]);
  });
});
