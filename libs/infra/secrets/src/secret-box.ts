import { createCurve, fromCurveSeed } from '@nats-io/nkeys';
import {
  SECRETS_KEY_VARIABLE,
  SECRETS_PUBLIC_KEY_VARIABLE,
  replaceAt,
  sealedPaths,
  type SealedValue,
  type ValuePath,
} from '@granule/task-model';
import { SecretsError } from './secrets.errors';

// NATS curve keys (nkeys "xkeys"): a public key is `X` + 55 base32 characters, a seed `SX` + 56.
const PUBLIC_KEY = /^X[A-Z2-7]{55}$/;
const SEED = /^SX[A-Z2-7]{56}$/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The installation's key pair: the seed opens (orchestrator only), the public key seals (everyone else). */
export interface SecretsKeyPair {
  /** `GRANULE_SECRETS_KEY`: an nkeys curve seed, `SX...`. */
  secretKey: string;
  /** `GRANULE_SECRETS_PUBLIC_KEY`: its public key, `X...`. */
  publicKey: string;
}

/** A new random key pair (`granule secrets keygen`). */
export function generateSecretsKeyPair(): SecretsKeyPair {
  const kp = createCurve();
  const pair = { secretKey: decoder.decode(kp.getSeed()), publicKey: kp.getPublicKey() };
  kp.clear();
  return pair;
}

/** What is wrong with a public key's text (never quoting it back), or undefined. */
export function secretsPublicKeyProblem(text: string): string | undefined {
  if (PUBLIC_KEY.test(text)) {
    try {
      createCurve().seal(new Uint8Array(1), text);
      return undefined;
    } catch {
      return 'expected a curve public key from granule secrets keygen; this one fails its checksum';
    }
  }
  if (SEED.test(text))
    return `expected the public key (X..., 56 characters); this is the private key, which belongs to the orchestrator's ${SECRETS_KEY_VARIABLE} only`;
  return `expected a curve public key (X..., 56 characters) from granule secrets keygen, got ${text.length} characters`;
}

/** What is wrong with a private key's text (never quoting it back), or undefined. */
function oneKeyProblem(text: string): string | undefined {
  if (SEED.test(text)) {
    try {
      fromCurveSeed(encoder.encode(text)).clear();
      return undefined;
    } catch {
      return 'expected a curve seed from granule secrets keygen; this one fails its checksum';
    }
  }
  if (PUBLIC_KEY.test(text))
    return `expected the private key (SX..., 58 characters); this is the public key, which belongs in ${SECRETS_PUBLIC_KEY_VARIABLE}`;
  return `expected a curve seed (SX..., 58 characters) from granule secrets keygen, got ${text.length} characters`;
}

/**
 * What is wrong with `GRANULE_SECRETS_KEY` (one seed, or several separated by commas: the current
 * one first, then older ones still to open), never quoting it back; undefined when it is right.
 */
export function secretsKeyProblem(text: string): string | undefined {
  const seeds = text.split(',').map((s) => s.trim());
  for (const [i, seed] of seeds.entries()) {
    const problem = oneKeyProblem(seed);
    if (problem) return seeds.length > 1 ? `key ${i + 1} of ${seeds.length}: ${problem}` : problem;
  }
  return undefined;
}

/**
 * Seals values for the installation's public key: each value (as JSON) goes into a NaCl box from
 * a fresh one-off key pair to the installation's key, so only the holder of the seed can open it
 * and two seals of one value differ. The result is `{"$sealed": "<one-off public key>.<base64>"}`.
 */
export class SecretSealer {
  constructor(readonly publicKey: string) {
    const problem = secretsPublicKeyProblem(publicKey);
    if (problem) throw new SecretsError('SECRETS_BAD_KEY', `${SECRETS_PUBLIC_KEY_VARIABLE}: ${problem}`);
  }

  /** Seals one JSON value. */
  readonly seal = (value: unknown): SealedValue => {
    const once = createCurve();
    try {
      const box = once.seal(encoder.encode(JSON.stringify(value)), this.publicKey);
      return { $sealed: `${once.getPublicKey()}.${Buffer.from(box).toString('base64')}` };
    } finally {
      once.clear();
    }
  };
}

/**
 * Opens what a `SecretSealer` sealed for one of its seeds' public keys; keeps what it opened (one
 * box opens once). Several seeds (`GRANULE_SECRETS_KEY=new,old`) let values sealed for the old
 * key open while new ones are sealed for the new key: a key is rotated without re-sealing at once.
 */
export class SecretOpener {
  /** The public key of the first seed: the one values should be sealed for now. */
  readonly publicKey: string;
  private readonly opened = new Map<string, unknown>();
  private readonly seeds: string[];

  constructor(
    seeds: string | readonly string[],
    private readonly maxKept = 4096,
  ) {
    this.seeds = (typeof seeds === 'string' ? seeds.split(',') : [...seeds]).map((s) => s.trim()).filter(Boolean);
    if (this.seeds.length === 0)
      throw new SecretsError('SECRETS_BAD_KEY', `${SECRETS_KEY_VARIABLE}: expected a curve seed, got none`);
    for (const seed of this.seeds) {
      const problem = secretsKeyProblem(seed);
      if (problem) throw new SecretsError('SECRETS_BAD_KEY', `${SECRETS_KEY_VARIABLE}: ${problem}`);
    }
    const kp = fromCurveSeed(encoder.encode(this.seeds[0]));
    this.publicKey = kp.getPublicKey();
    kp.clear();
  }

  /** The value inside; throws `SECRETS_CANNOT_OPEN` when it was sealed for another key or changed. */
  open(sealed: SealedValue): unknown {
    const text = sealed.$sealed;
    if (this.opened.has(text)) return this.opened.get(text);
    const dot = text.indexOf('.');
    const sender = text.slice(0, dot);
    let clear: Uint8Array | null = null;
    if (dot > 0 && PUBLIC_KEY.test(sender)) {
      const box = Buffer.from(text.slice(dot + 1), 'base64');
      for (const seed of this.seeds) {
        const kp = fromCurveSeed(encoder.encode(seed));
        try {
          clear = kp.open(box, sender);
        } catch {
          clear = null;
        } finally {
          kp.clear();
        }
        if (clear !== null) break;
      }
    }
    if (clear === null)
      throw new SecretsError(
        'SECRETS_CANNOT_OPEN',
        `a sealed value does not open with ${SECRETS_KEY_VARIABLE} (public key ${this.publicKey}${this.seeds.length > 1 ? ` and ${this.seeds.length - 1} older` : ''}): it was sealed for another key, or changed`,
      );
    const value: unknown = JSON.parse(decoder.decode(clear));
    if (this.opened.size >= this.maxKept) this.opened.delete(this.opened.keys().next().value as string);
    this.opened.set(text, value);
    return value;
  }

  /** A copy of `tree` with every sealed value opened, and where they were. */
  openTree<T>(tree: T): { value: T; paths: ValuePath[] } {
    const paths = sealedPaths(tree);
    if (paths.length === 0) return { value: tree, paths };
    return { value: replaceAt(tree, paths, (v) => this.open(v as SealedValue)), paths };
  }
}
