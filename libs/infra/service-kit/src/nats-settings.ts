import { IsOptional, IsString, Matches, MinLength } from 'class-validator';
import { DEFAULT_SUBJECT_PREFIX } from '@granule/contracts';

/** One NATS URL or a comma-separated list of them. */
export const NATS_URL_PATTERN = /^(nats|tls|ws|wss):\/\/[^\s,]+(,(nats|tls|ws|wss):\/\/[^\s,]+)*$/;
/** Dotted subject tokens: letters, digits, `_` and `-`, no wildcards. */
export const SUBJECT_PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * How every Granule process reaches NATS (services, agents and the CLI alike): the servers, the
 * subject prefix of the installation, and its credentials: a `.creds` file (NATS's user JWT and
 * seed, issued by `granule auth issue` / `granule agent enroll`) and, for TLS, a CA to trust and
 * a client certificate and key for servers that ask for one. Service configs extend it.
 */
export class NatsSettings {
  @Matches(NATS_URL_PATTERN, { message: 'must be a nats:// or tls:// URL, or a comma-separated list of them' })
  natsUrl = 'nats://127.0.0.1:4222';

  @Matches(SUBJECT_PREFIX_PATTERN, {
    message: 'must be dotted tokens of letters, digits, _ and - (e.g. granule)',
  })
  subjectPrefix = DEFAULT_SUBJECT_PREFIX;

  /** A `.creds` file: without it the process connects without credentials (a NATS without auth). */
  @IsOptional() @IsString() @MinLength(1) natsCreds?: string;
  /** PEM file of the CA that signed the NATS server's certificate (turns TLS on). */
  @IsOptional() @IsString() @MinLength(1) natsTlsCa?: string;
  /** PEM client certificate and key, for a server that verifies clients. */
  @IsOptional() @IsString() @MinLength(1) natsTlsCert?: string;
  @IsOptional() @IsString() @MinLength(1) natsTlsKey?: string;
}

/** The variables of `NatsSettings`, the same in every process. */
export const NATS_ENV = {
  natsUrl: 'GRANULE_NATS_URL',
  subjectPrefix: 'GRANULE_SUBJECT_PREFIX',
  natsCreds: 'GRANULE_NATS_CREDS',
  natsTlsCa: 'GRANULE_NATS_TLS_CA',
  natsTlsCert: 'GRANULE_NATS_TLS_CERT',
  natsTlsKey: 'GRANULE_NATS_TLS_KEY',
} as const;
