/// <reference types="node" />
import { EventEmitter } from 'node:events'
import type { RemoteInfo } from 'node:dgram'

export interface Logger {
  trace (obj: object | string, msg?: string): void
  debug (obj: object | string, msg?: string): void
  info (obj: object | string, msg?: string): void
  warn (obj: object | string, msg?: string): void
  error (obj: object | string, msg?: string): void
  fatal (obj: object | string, msg?: string): void
  child? (bindings: object): Logger
}

/** `receivedAt`: when the message arrived, epoch ms (the kernel's time, with a sub-ms fraction, on the native UDP path); always set on what a worker's doWork gets, the same when delivered again */
export interface UdpMessage { data: Buffer, rinfo: RemoteInfo, receivedAt?: number }
export interface TcpMessage { data: Buffer, remote: { address: string, port: number }, receivedAt?: number }
export type Message = UdpMessage | TcpMessage

export interface WorkerRef {
  id: number
  slot: number
  pid: number
  state: 'starting' | 'ready' | 'closing' | 'gone'
  dispatched: number
  processed: number
  failed: number
  inFlight: number
  readonly saturated: boolean
}

export type DistributeFn = (this: LoadBalancer, workers: WorkerRef[], message: Message) => WorkerRef
export type FramingFn = (buffer: Buffer) => { frame?: Buffer, consumed: number } | null

export interface LoadBalancerOptions {
  name?: string
  protocol?: 'udp' | 'tcp_server' | 'tcp_client' | string
  host?: string
  port?: number
  instances?: number | 'auto'
  worker?: string
  workername?: string
  workerOptions?: Record<string, unknown>
  retry?: boolean
  retryDelay?: number
  distribution?: 'round-robin' | 'hash' | 'least-loaded' | DistributeFn
  framing?: 'newline' | 'octet-counting' | 'auto' | 'length-prefixed' | 'length-prefixed:16' | 'length-prefixed:32' | 'hep' | 'ipfix' | FramingFn
  /** with distribution hash, while a key's worker is down or saturated: prefer another worker, or (strict) wait for its own */
  affinity?: 'prefer' | 'strict'
  /** lines: each non-empty line of a datagram or frame is a message of its own */
  split?: 'none' | 'lines'
  maxFrameBytes?: number
  maxConnections?: number
  maxConnectionsPerSource?: number
  /** tcp_server, ms: a connection that would pass a limit first closes the one longest without a complete frame, if that long (default 10000; 0 = refuse instead) */
  reclaimIdleAfter?: number
  /** ms: a TCP connection holding an unfinished frame this long is closed (default 60000; 0 = never) */
  frameTimeout?: number
  /** only these sources may send: IPv4/IPv6 addresses and prefixes ('10.0.0.0/8', 'fd00::/8'); udp and tcp_server; default everyone */
  allow?: string[] | string
  /** tcp_client: connect with TLS, verifying the server against Node's bundled CAs (plus NODE_EXTRA_CA_CERTS) unless tlsCa (implied by tlsCa and tlsCert) */
  tls?: boolean
  /** PEM certificate (chain) path: TLS on (tcp_server needs it with tlsKey; tcp_client presents it); re-read on restart() */
  tlsCert?: string
  /** PEM private key path (unencrypted) of tlsCert */
  tlsKey?: string
  /** PEM CA path: tcp_server requires client certificates signed by it (mutual TLS); tcp_client verifies the server against it */
  tlsCa?: string
  /** tcp_server with tlsCa: client certificate names (CN or DNS SAN) accepted; '*' = one leftmost label */
  tlsAllowedNames?: string[] | string
  /** ms: a TLS handshake not finished by then is closed and its connection slot freed (default 10000) */
  tlsHandshakeTimeout?: number
  idleTimeout?: number
  batchSize?: number
  batchDelay?: number
  maxInFlight?: number
  /** With the disk buffer: bytes sent to the workers and not acknowledged, shared among them; past it batches wait on disk (0: none). */
  memoryBudget?: number
  /** Node/V8 flags of the worker processes, after the master's own (default: a 2 MiB semi-space, old generation grown 20 % per full GC) */
  workersNodeArgs?: string[]
  recvBufferSize?: number
  /** UDP receive path: native recvmmsg (built on install), node:dgram, or auto (native when built) */
  udpReceiver?: 'auto' | 'native' | 'dgram'
  /** udp: 'master' (default) receives in the master and distributes batches; 'reuseport' (Linux; Node >= 22.12 or the native receiver): each worker binds the port (SO_REUSEPORT), the kernel picks the worker by sender address and port; refused with the disk buffer, allow, a distribution or distribute()/key() of one's own, tcp */
  receive?: 'master' | 'reuseport'
  respawnDelay?: number
  maxCrashes?: number
  crashWindow?: number
  drainTimeout?: number
  /** disk buffer (off by default in code, on in the CLI for MongoDB collectors): each batch is written to bufferDir before it goes to a worker; while the workers are full messages wait there instead of being dropped, and a start replays what a previous run left unstored */
  buffer?: boolean
  /** the disk buffer's directory, one per collector (default: <PM2 home>/collector-buffer/<name>); a second live collector on it fails the start with BufferError */
  bufferDir?: string
  /** where batches given up are kept as dead letters (default: <bufferDir>/dead-letter with the disk buffer, else <PM2 home>/collector-dead-letter/<name>) */
  deadLetterDir?: string
  /** disk buffer bound in bytes (default 1 GiB, at least 65536): when it holds this much, new messages are dropped (dropped.bufferFull) and TCP senders paused */
  bufferMaxBytes?: number
  /** none: the page cache only (survives a process crash); interval (default): fdatasync each second (a machine crash loses at most that second); batch: fdatasync every batch */
  bufferSync?: 'none' | 'interval' | 'batch'
  /** serve /metrics (Prometheus), /healthz and /readyz on this port (off unless given; 0 = ephemeral) */
  metricsPort?: number
  metricsHost?: string
  /** YAML web config of the metrics endpoints (Prometheus exporter toolkit format: tls_server_config, basic_auth_users bcrypt hashes); needs metricsPort; re-read on restart() */
  metricsWebConfig?: string
  logger?: Logger
}

export interface WorkerStats {
  id: number
  slot: number
  pid: number
  state: string
  dispatched: number
  processed: number
  failed: number
  inFlight: number
  /** how long the oldest batch this worker has not acknowledged has waited */
  oldestUnackedMs: number
  /** the worker's own stats() (null if it did not answer in time); asked for before the counters were read */
  custom: Record<string, any> | null
  /** how old `custom` is against the counters of the same reply (ms) */
  customAgeMs: number | null
}

export interface Summary {
  name: string
  protocol: string
  /** the UDP receive path in use; null for TCP or when not listening */
  receiver: 'native' | 'dgram' | null
  state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped'
  address: object | null
  /** where /metrics, /healthz and /readyz are served; null when off */
  metrics: object | null
  uptime: number
  instances: number
  received: number
  bytes: number
  dispatched: number
  processed: number
  failed: number
  inFlight: number
  /** how long the oldest unacknowledged batch has waited (a stalled database shows here) */
  oldestUnackedMs: number
  /** messages a previous run left in the disk buffer, and dead letters queued by `collector replay`, delivered by this one */
  replayed: number
  /** messages given up and kept as dead letters (poison: workers kept ending while processing their batch; or no worker left to take them): not `dropped`, since part of such a batch may be stored; replaying completes it exactly once */
  deadLettered: number
  /** the dead-letter directory: what it holds now (queued ones too) and what this run replayed from it */
  deadLetters: { dir: string, files: number, messages: number, replayed: number } | null
  /** messages waiting in the disk buffer for room at a worker; after a stop, those left in it for the next start (0 when the buffer is off) */
  buffered: number
  /** the disk buffer; null when it is off */
  buffer: BufferSummary | null
  lost: number
  /** bufferFull: dropped because the disk buffer was at bufferMaxBytes; bufferUnreadable: a batch the disk buffer could not read back */
  dropped: { queueFull: number, oversize: number, badFrame: number, empty: number, partial: number, workerLost: number, shutdown: number, notAllowed: number, bufferFull: number, bufferUnreadable: number, kernel: number, total: number, [reason: string]: number }
  events: Record<string, number>
  /** for events that have a cause: counts by reason, e.g. eventReasons.connectionsRejected.notAllowed */
  eventReasons: Record<string, Record<string, number>>
  restarts: { listener: number, workers: number, rolling: number }
}

export interface BufferSummary {
  /** absolute path of the buffer directory */
  dir: string
  /** bytes of its segment files */
  bytes: number
  maxBytes: number
  segments: number
  /** records (one per batch) not yet acknowledged, and the messages in them (sent or waiting) */
  records: number
  messages: number
  sync: 'none' | 'interval' | 'batch'
  /** fdatasync calls made */
  syncs: number
  /** writes and syncs that failed (batches then held in memory only; events.bufferWriteFailed) */
  writeErrors: number
  /** at maxBytes: new messages are dropped (dropped.bufferFull), TCP senders paused */
  full: boolean
  /** messages waiting in it for room at a worker */
  waiting: number
  /** age of the oldest waiting message (0 when none waits) */
  oldestMs: number
  /** messages a stop left in it for the next start */
  kept: number
  /** damaged records (cut short by a crash, or corrupted) skipped when it was opened, and their bytes */
  damagedRecords: number
  damagedBytes: number
}

/**
 * One moment's counters: Σ workers + retired = processed, failed and
 * dispatched; Σ workers[].inFlight + orphaned = inFlight.
 */
export interface Stats extends Summary {
  /** every live worker, draining ones included, by slot */
  workers: WorkerStats[]
  /** what workers now gone processed, failed and were dispatched */
  retired: { processed: number, failed: number, dispatched: number }
  /** messages held for a slot whose next worker is not up yet */
  orphaned: number
}

type Callback<T> = (err: Error | null, value?: T) => void

export interface WorkerExitInfo { id: number, slot: number, pid: number, code: number | null, signal: string | null, [key: string]: unknown }

/** The events a LoadBalancer emits, with their arguments. */
export interface LoadBalancerEvents {
  listening: [address: object]
  listenerError: [error: Error, delay: number]
  error: [error: Error]
  workerExit: [info: WorkerExitInfo]
  workerRespawned: [info: { id: number, slot: number, pid: number }]
  stopped: []
}

export class LoadBalancer extends EventEmitter {
  /** option keys a subclass accepts beyond LoadBalancer's own: `static optionKeys = [...super.optionKeys, 'mine']` */
  static optionKeys: readonly string[]
  constructor (options?: LoadBalancerOptions)
  readonly options: Required<LoadBalancerOptions>
  readonly logger: Logger
  on<E extends keyof LoadBalancerEvents> (event: E, listener: (...args: LoadBalancerEvents[E]) => void): this
  once<E extends keyof LoadBalancerEvents> (event: E, listener: (...args: LoadBalancerEvents[E]) => void): this
  off<E extends keyof LoadBalancerEvents> (event: E, listener: (...args: LoadBalancerEvents[E]) => void): this
  emit<E extends keyof LoadBalancerEvents> (event: E, ...args: LoadBalancerEvents[E]): boolean
  distribute (workers: WorkerRef[], message: Message): WorkerRef
  /** the flow key of `hash` distribution: a string is hashed (FNV-1a), an integer mixed (its low 32 bits) */
  key (message: Message): string | number
  /** what the workers write to, without credentials (null: cannot say); the disk buffer and dead letters record it and are not replayed into another */
  destination (): string | null
  /** optional: the key `key()` gives, read from the batch entry at `offset` (native receive path; see lib/shared/batch-codec.js) */
  /** the key() of the message in the batch entry at `offset`, read in place: its bytes are buf[batchEntry.dataStart(buf, offset), batchEntry.dataEnd(buf, offset)) */
  entryKey? (buf: Buffer, offset: number): string | number
  /** optional: the parts of the message whose bytes are buf[start, end), each distributed and counted on its own with the whole's sender and arrival; null keeps it whole */
  parts? (buf: Buffer, start: number, end: number): Buffer[] | null
  /** subclass hook, once per start: `await super.doStart()` binds and forks (prepare what workers need before it) */
  protected doStart (): Promise<void>
  /** subclass hook: `await super.doStop()` drains; release what doStart acquired after it */
  protected doStop (): Promise<void>
  start (cb?: Callback<void>): Promise<void>
  stop (cb?: Callback<void>): Promise<void>
  restart (cb?: Callback<void>): Promise<void>
  address (): object | null
  /** whether it can take traffic: the listener bound and every worker slot online */
  readiness (): { ready: boolean, state: string, listening: boolean, workers: { online: number, expected: number }, reason?: string }
  /** where /metrics, /healthz and /readyz are served, or null (metricsPort not set) */
  metricsAddress (): object | null
  /** 'native' or 'dgram' for a UDP listener, else null */
  receiver (): 'native' | 'dgram' | null
  stats (): Promise<Stats>
  summary (): Summary
  static protocols: typeof protocols
  static strategies: typeof strategies
}

/** the batch a message came in: `receivedAt` is when the batch's first message arrived (epoch ms; a redelivered batch keeps it; each message has its own, `message.receivedAt`) */
export interface Delivery { seq: number, batchId: number, origin: string, redelivered: boolean, receivedAt: number }

export class Worker {
  constructor (options?: Record<string, any>)
  options: Record<string, any>
  logger: Logger
  slot: number
  collectorName: string
  leader: boolean
  /** 'processed' (default): acknowledged when doWork returns; 'stored': when you call stored() */
  acknowledge: 'processed' | 'stored'
  /** ms a worker whose master died waits for its batches to finish before it flushes, closes and exits (default 60000) */
  orphanTimeout: number
  /** the checkpoint of the message being processed; pass it to stored() once it is durable */
  checkpoint (): number
  /** whether every message of `checkpoint`'s batch has been through doWork */
  finished (checkpoint: number): boolean
  /** everything up to and including `checkpoint` is durable (Infinity: all doWork has finished) */
  stored (checkpoint: number): void
  /** 12 bytes naming the message being processed, the same when redelivered (an idempotent _id) */
  messageKey (): Buffer | null
  /** the batch of the message being processed; `redelivered`: a worker holding it died */
  delivery (): Delivery | null
  /** refuse the message being processed: counted in the master's dropped[reason] */
  dropMessage (reason: string): void
  /** messages of batch `seq` (a delivery's seq, not yet acknowledged), by their places in it, are failed instead of processed, each once: what they gave was refused for good */
  failMessages (seq: number, places: Iterable<number>): void
  /** when the master received the oldest message it still holds for any worker: epoch ms; Infinity when none, 0 when it does not answer */
  heldSince (): Promise<number>
  init (): void | Promise<void>
  /** called with the whole of a redelivered batch before its first doWork (read in bulk what deciding each message needs) */
  prepareRedelivered (messages: Message[], delivery: { seq: number, batchId: number, origin: string, redelivered: boolean }): void | Promise<void>
  doWork (message: Message): void | Promise<void>
  flush (): void | Promise<void>
  close (): void | Promise<void>
  stats (): Record<string, any> | Promise<Record<string, any>>
  onLeader (isLeader: boolean): void | Promise<void>
  /** the master has nearly this worker's share of maxInFlight or memoryBudget in flight: write what is held back now */
  onMasterWaiting (): void
  /** the bytes held of messages taken and not stored, counted against the worker's share of memoryBudget instead of the bytes of the batches it has been through; null (the default): not said */
  heldBytes (): number | null
}

export type StreamItem =
  | { fromID: string | number, toID: string | number, IP?: string, highestPacketNum: number, timestamp?: Date | number, fields?: Record<string, unknown> }
  | { sideID: string | number, IP?: string, timestamp?: Date | number, fields: Record<string, unknown> }
  | { endID: string | number, timestamp?: Date | number }

/** One setting of a collector or its workers, in the shape of the LoadBalancer's options (lib/shared/settings.js). */
export interface SettingDeclaration {
  type: 'string' | 'integer' | 'number' | 'boolean' | 'port' | 'duration' | 'size' | 'list' | 'path'
  default?: unknown
  /** inclusive; durations in ms */
  range?: readonly [number, number]
  choices?: readonly string[] | (() => readonly string[])
  env?: string
  secret?: boolean
  group?: string
  description?: string
  /** false: code only (a worker setting passed in `workerOptions`, not a collector option or flag) */
  flag?: false
  /** what is wrong with a value, or undefined */
  validate? (value: any): string | undefined
}
export type SettingsDeclaration = Readonly<Record<string, SettingDeclaration>>
/** A collector's settings: its LoadBalancer defaults, the options it takes itself, and its workers' settings. */
export interface CollectorSettings {
  defaults: Readonly<Partial<LoadBalancerOptions>>
  master: SettingsDeclaration
  worker: SettingsDeclaration
}

/** Settings every collector's workers understand (beside the definition's own `settings`). */
export interface WorkerSettings {
  mongoUri?: string
  database?: string
  flushInterval?: number
  maxPending?: number
  flushTimeout?: number
  serverSelectionTimeoutMS?: number
  retryDelay?: number
  /** ms: delete what is older in every collection, each by its own date field; 0 (default): nothing expires */
  retention?: number
  /** per-collection retention over `retention`: 'COLLECTION=DURATION' or 'COLLECTION=off' */
  retentionFor?: string[]
  /** bytes: over it the oldest day of every collection is deleted first; 0 (default): none */
  maxStorage?: number
  /** ms between the leader's measurements of the collections (default 60000) */
  storageInterval?: number
  /** how documents expire: TTL indexes where the server has a TTL monitor (auto), or range deletes by the leader */
  retentionBy?: 'auto' | 'ttl' | 'sweeper'
  [key: string]: unknown
}

export interface CountIncrement { metric: string, n?: number, at?: Date | number, /** the part of the metric a sender chooses, capped by the sink's maxNewKeysPerMinute */ key?: string }

/** The options of a collector's master (`new module.Collector(options)`): the LoadBalancer's, the database's and its workers' settings (docs/collectors.md). */
export interface CollectorOptions extends LoadBalancerOptions {
  mongoUri?: string
  database?: string
  flushInterval?: number
  maxPending?: number
  /** where an embedded server is started when no MongoDB is configured */
  mongoPort?: number
  /** where that embedded server keeps its data (default $COLLECTOR_DB_PATH, else ~/.collector-cluster/db) */
  dbPath?: string
  /** that embedded server in memory: nothing is kept when it stops */
  dbMemory?: boolean
}

/** A collector's master: a LoadBalancer that settles the database (URI, local server or an embedded one it owns) before its workers start. */
export interface CollectorClass {
  new (options?: CollectorOptions): LoadBalancer
  /** its settings, declared once: LoadBalancer defaults, its own options, its workers' settings */
  readonly settings: CollectorSettings
}

/** A parsed SD-ELEMENT in message order; a param's third entry holds its bytes when they are not valid UTF-8. */
export interface SyslogSdElement { id: string, params: Array<[name: string, value: string] | [name: string, value: string, bytes: Buffer]> }

/** Deviations from RFC 3164 / RFC 5424 a lenient reading accepts (flagged in `deviations`). */
export type SyslogDeviation = 'no-hostname' | 'bsd-day-zero-padded' | 'bsd-day-unpadded' | 'bsd-month-case' | 'bsd-year' | 'bsd-fraction' | 'iso-timestamp' | 'duplicate-sd-id'

export interface SyslogRecord {
  format: '5424' | '3164' | 'raw'
  facility?: number
  severity?: number
  facilityName?: string
  severityName?: string
  timestamp?: Date | null
  /** the TIMESTAMP as received, when `timestamp` does not hold all of it (more than millisecond digits, an offset other than Z, RFC 3164's yearless form) */
  timestampText?: string
  host?: string | null
  app?: string | null
  procid?: string | null
  msgid?: string | null
  /** map view: SD-ID → PARAM-NAME → value, a repeated param an array; keys are the names with `%` `.` `$` percent-encoded (encodeSdName), so none starts with `$` or holds a `.` */
  structuredData?: Record<string, Record<string, string | string[]>> | null
  /** the SD elements in order, names as sent, when the map cannot hold them faithfully (a repeated SD-ID or param, a name starting with a digit, a value that is not UTF-8) */
  sdElements?: SyslogSdElement[]
  message: string
  /** MSG's bytes (after a BOM), or a raw record's, when they are not valid UTF-8 */
  messageRaw?: Buffer
  invalidUtf8?: true
  deviations?: SyslogDeviation[]
  receivedAt: Date
  error?: string
  raw?: string
  rawBytes?: Buffer
}

export interface ParseSyslogOptions {
  receivedAt?: Date
  defaultYear?: number
  keepRaw?: boolean
  /** accept no deviation at all */
  strict?: boolean
  /** the deviations to accept; default: all RFC 3164 ones, not duplicate-sd-id */
  lenient?: Iterable<SyslogDeviation>
}

export function parseSyslog (input: Buffer | Uint8Array | string, options?: ParseSyslogOptions): SyslogRecord
/** The `structuredData` key of an SD-ID or PARAM-NAME: `%` `.` `$` percent-encoded (`a.b` → `a%2Eb`), anything else as sent. */
export function encodeSdName (name: string): string
/** The SD-ID or PARAM-NAME of a `structuredData` key: the inverse of encodeSdName (decodeURIComponent gives the same). */
export function decodeSdName (key: string): string

export interface RtcpReportBlock { ssrc: number, fractionLost: number, cumulativeLost: number, highestSeq: number, jitter: number, lsr: number, dlsr: number }
export type RtcpPacket =
  | { type: 'SR', ssrc: number, ntpSec: number, ntpFrac: number, rtpTimestamp: number, packetCount: number, octetCount: number, reports: RtcpReportBlock[], padding?: number }
  | { type: 'RR', ssrc: number, reports: RtcpReportBlock[], padding?: number }
  | { type: 'SDES', chunks: RtcpSdesChunk[], padding?: number }
  | { type: 'BYE', sources: number[], reason?: string, reasonRaw?: Buffer, reasonInvalidUtf8?: true, padding?: number }
  | { type: 'APP', subtype: number, ssrc: number, name: string, data: Buffer, padding?: number }
  | { type: 'XR', ssrc: number, blocks: Array<Record<string, unknown>>, padding?: number }

/** One SDES item as received (RFC 3550 §6.5): `raw` and `invalidUtf8` only when the text is not valid UTF-8; PRIV (8) splits off `prefix`; `name` is null for types above 8. */
export interface RtcpSdesItem { type: number, name: string | null, text: string, prefix?: string, raw?: Buffer, invalidUtf8?: true }
/** `items`: by name, the first of each type (PRIV entries in order); `list` (decoded only): every item in order. */
export interface RtcpSdesChunk { ssrc: number, items: { cname?: string, name?: string, email?: string, phone?: string, loc?: string, tool?: string, note?: string, priv?: Array<{ prefix: string, value: string }> }, list?: RtcpSdesItem[] }
export type RtcpDecodeReason = 'not-buffer' | 'too-short' | 'bad-version' | 'first-not-sr-rr' | 'bad-length' | 'bad-padding' | 'report-count' | 'truncated-block' | 'source-count-mismatch' | 'sdes-unterminated' | 'nonzero-padding' | 'sdes-bad-priv'
export interface RtcpDecodeOptions { /** deviations to accept and list in `deviations` instead of refusing */ tolerate?: Array<'sdes-unterminated' | 'nonzero-padding'> }

/** Decodes one RTCP compound datagram (RFC 3550 §6, XR of RFC 3611); throws DecodeError with a `reason` (an RtcpDecodeReason). */
export function decodeRtcp (buf: Buffer | Uint8Array, options?: RtcpDecodeOptions): { packets: RtcpPacket[], deviations?: RtcpDecodeReason[] }
/** Encodes packets in decodeRtcp's shapes into one compound datagram. */
export function encodeRtcp (packets: RtcpPacket[]): Buffer

/** After a drained stop: received + replayed + dropped.kernel = processed + failed + dropped.total + deadLettered + inFlight + buffered. */
export function accountedFor (summary: Summary): boolean

export interface FlagDefinition {
  alias?: string | string[]
  type?: 'string' | 'integer' | 'number' | 'boolean' | 'port' | 'duration' | 'list' | 'path' | FlagType
  default?: unknown
  required?: boolean
  description?: string
  choices?: readonly string[] | (() => readonly string[])
  min?: number
  max?: number
  env?: string
  secret?: boolean
  group?: string
  keywords?: Record<string, () => unknown>
  validate? (value: any): string | undefined
}

/** The generic argv engine: flags from argv, then the environment, then defaults. */
export class ArgvConfig {
  static flags: Readonly<Record<string, FlagDefinition>>
  static usage: string
  static extendFlags (changes: Record<string, Partial<FlagDefinition> | null>): Readonly<Record<string, FlagDefinition>>
  static parse<T extends ArgvConfig> (this: new (argv?: string[], env?: NodeJS.ProcessEnv) => T, argv?: string[], env?: NodeJS.ProcessEnv): Readonly<Record<string, any>>
  constructor (argv?: string[], env?: NodeJS.ProcessEnv)
  readonly argv: readonly string[]
  getConfig (): Readonly<Record<string, any>>
  getDefault (): Readonly<Record<string, any>>
  help (): string
  /** cross-flag checks: `return [...super.validate(config, given), ...mine]` */
  validate (config: Record<string, any>, given: Set<string>): Array<{ flag?: string, message: string }>
  /** last touch on the parsed values before they are frozen */
  finalize (config: Record<string, any>): Record<string, any>
}

/** ArgvConfig with the load balancer's flags (one per option that has a flag, plus --log-level and --help). */
export class LoadBalancerConfig extends ArgvConfig {}

export interface FlagType { name: string, metavar?: string, parse (raw: string): { value: unknown } | { error: string }, min?: number, max?: number, format? (value: unknown): string }
export const flagTypes: Readonly<Record<'string' | 'integer' | 'number' | 'boolean' | 'port' | 'duration' | 'size' | 'list' | 'path', FlagType>>

export interface ProtocolContext {
  host: string
  port: number
  options: Required<LoadBalancerOptions>
  logger: Logger
  /** true: a worker took it (counted); false: nothing counted, the caller still holds it: wait for onCapacity, or give it up with dropRefused() */
  dispatch (message: Message, force?: boolean): boolean
  /** a message dispatch() refused is thrown away: counted as dropped.bufferFull (the disk buffer is full) or dropped.queueFull */
  dropRefused (): void
  /** datagrams packed in the batch format (u32 length, u16 port, u8 address length, address, data) in buffer[0, end) */
  dispatchEntries (buffer: Buffer, end: number): void
  drop (reason: string): void
  count (event: string, reason?: string): void
  onCapacity (fn: () => void): void
  fail (error: Error): void
}

export interface Protocol {
  /** `reload()`, when a listener has one, runs on restart(): re-read its files (TLS certificates); a throw keeps the old ones */
  start (ctx: ProtocolContext): Promise<{ address (): object | null, close (): Promise<void>, reload? (): void }>
}

export const protocols: {
  register (name: string, protocol: Protocol): void
  get (name: string): Protocol
  has (name: string): boolean
  list (): string[]
}

export const strategies: Readonly<Record<'round-robin' | 'hash' | 'least-loaded', DistributeFn>>
/** Reads a batch entry in a LoadBalancer's entryKey(buf, offset): the message's bytes are buf[dataStart, dataEnd). */
export const batchEntry: Readonly<{ dataStart (buf: Buffer, offset: number): number, dataEnd (buf: Buffer, offset: number): number, message (buf: Buffer, offset: number): Message }>
export const FRAMINGS: readonly string[]

export class CollectorError extends Error { code: string }
export class InvalidConfigError extends CollectorError { problems: Array<{ flag?: string, option?: string, message: string }> }
export class InvalidOptionError extends CollectorError { option: string; value: unknown; /** for an unknown key: the declared one it most likely meant */ closest?: string }
export class WorkerDownError extends CollectorError {
  slot?: number
  /** When the worker module did not load: the file at fault (the module, or one it required) */
  file?: string
  /** ...and the line there, when known */
  line?: number | null
}
export class DecodeError extends CollectorError { constructor (reason: string, message?: string, options?: { keepState?: boolean }); reason: string; keepState?: boolean }
export class DatabaseError extends CollectorError {}
/** start() could not bind or connect its listener (ERR_LISTEN): port in use, no permission, no such address; never retried */
export class ListenError extends CollectorError {
  constructor (protocol: string, host: string, port: number, cause?: Error & { code?: string })
  protocol: string
  host: string
  port: number
  /** the socket error's code (EADDRINUSE, EACCES, EADDRNOTAVAIL, ENOTFOUND) */
  syscallCode?: string
  /** whether a first bind failing with `err` fails the start rather than being retried */
  static isBindError (err: unknown): boolean
}
/** the metricsWebConfig file cannot be used (ERR_WEB_CONFIG): missing, not YAML, an unknown key, an unreadable certificate, a hash that is not bcrypt */
export class WebConfigError extends InvalidOptionError {
  constructor (file: string, detail: string)
  /** absolute path of the file */
  file: string
  /** what is wrong, one line, no secret values */
  detail: string
}

/** the disk buffer cannot be used (ERR_BUFFER): its directory cannot be created or written, or another live process holds it (each collector needs a bufferDir of its own) */
export class BufferError extends CollectorError {
  constructor (dir: string, reason: string, cause?: Error)
  /** absolute path of the buffer directory */
  dir: string
}

export function resolveMongo (options?: { uri?: string, env?: NodeJS.ProcessEnv, logger?: Logger, port?: number, host?: string }): Promise<{ uri: string, server: { uri: string, stop (): Promise<void> } | null }>

/** Where a definition's record came from: when its message arrived (the same when delivered again), and its sender; with `keep`, the message's kept state (in decode); `redelivered` when the message was delivered before, to a worker or a master that died (its kept changes may be in `kept` already); `key()` its 12-byte key, the same when delivered again. */
export interface RecordSource { receivedAt: Date, remote: { address: string, port: number } | null, kept?: KeptState | null, redelivered?: boolean, key (): Buffer | null }
/** A definition's kept state for one scope (by default the sender's address): plain JSON values, kept by the framework across a worker's death. */
export interface KeptState { get (name: string): unknown, set (name: string, value: unknown): void, delete (name: string): void, keys (prefix?: string): string[] }
type OneOrMore<T> = T | T[] | null | undefined
export interface DocumentUpdate {
  /** the document's id, under the sink's `key` field (`_id` by default) */
  [key: string]: unknown
  inc?: Record<string, number>
  min?: Record<string, number | Date>
  max?: Record<string, number | Date>
  /** values every copy of the message carries (order does not matter) */
  set?: Record<string, unknown>
  /** the value of the newest message by arrival, stored as `{ batch, index, value }` */
  last?: Record<string, unknown>
  setOnInsert?: Record<string, unknown>
}
export interface IndexSpec { key: Record<string, 1 | -1>, unique?: boolean, name?: string }
/** The batch and place of the message a record came from, as a store sees it (docs/sinks.md). */
export interface SinkContext {
  mark: { origin: string, batchId: number, seq: number, redelivered: boolean } | null
  index: number
  seq: number
  key (): Buffer | null
  message: RecordSource
  /** the record's place among its message's records (as decode gave them) */
  record: number
}
/** What a store may use of its worker (workers/sink.js sinkHost). */
export interface SinkHost {
  readonly logger: Logger
  readonly server: { kind?: string } | null
  readonly leader: boolean
  readonly collectorName: string
  readonly connection: unknown
  logAtMost (key: string, level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', fields: object | (() => object), msg: string | (() => string)): void
  flushSoon (): Promise<void> | null
  dropMessage (reason: string): void
  /** Worker#failMessages */
  failMessages (seq: number, places: Iterable<number>): void
  /** Worker#heldSince: when the master received the oldest message it still holds */
  heldSince (): Promise<number>
}
/**
 * The contract every store behind a sink keeps (workers/sink.js; what each
 * method must guarantee: docs/sinks.md). Internal: not exported, typed for
 * contributors adding a kind of sink.
 */
export interface SinkStore {
  prepare (db: unknown): Promise<void>
  /** what the declaration's `of` makes of a record, checked; throws (naming the sink) for what it could not store */
  shape (record: unknown, message: unknown): unknown
  /** holds what shape() gave; never throws */
  accept (shaped: unknown, context: SinkContext): void
  readonly size: number
  /** the bytes its entries take: a document as its BSON, an update or a count as HELD_ENTRY_BYTES (1 KiB) */
  readonly heldBytes: number
  /** whether it takes `needed` more entries within `bound` (maxPending); a message some sink has no room for is dropped whole (workerFull) */
  roomFor (needed: number, bound: number): boolean
  hasBacklog (): boolean
  /** whether this flush writes it (`writeEvery` coalesces across flushes); `quiet`: input paused, the master waits, or at stop */
  due (now: number, quiet: boolean): boolean
  /** keeps what it did not prove stored, then throws */
  write (): Promise<void>
  oldestPending (): number
  abandon (): number | object
  storageTargets (): Array<{ collection: string, field: string }>
  onLeader (isLeader: boolean): void
  close (): Promise<void>
  stats (): Record<string, unknown>
}
export interface SinkDeclaration<R = any> { readonly kind: 'updates' | 'counters' | 'documents' | 'streams', readonly collection: string, of? (record: R, source: RecordSource): unknown }
/** What every sink takes: `maxBatch`, entries held that have the worker write at once (documents: also the largest insert, default 1000); `fromSettings`, fields taken from the workers' settings by name, e.g. `{ collection: 'countersCollection' }` */
export interface SinkOptions { maxBatch?: number, fromSettings?: Record<string, string> }
export const sinks: {
  updates<R = any> (spec: SinkOptions & { collection: string, of (record: R, source: RecordSource): OneOrMore<DocumentUpdate>, indexes?: IndexSpec[], /** a unique field documents are matched on, instead of `_id` */ key?: string, /** the date field retention reads a document's age from: a last activity each upsert moves forward (`max`), or one that never changes; none: kept forever */ expireBy?: string, /** ms a document keeps being written to after its expireBy time (a per-minute document: 60000): its age counts from then */ expireSpan?: number, /** the date field a document written before expireBy existed takes it from, at the leader's start with retention or a budget (default: as of that start) */ expireFrom?: string }): SinkDeclaration<R>
  counters<R = any> (spec: SinkOptions & { collection?: string, of (record: R, source: RecordSource): OneOrMore<CountIncrement>, preallocateRate?: number, /** new `key`s each worker takes a minute; past it counted under `otherwise` (default: no cap) */ maxNewKeysPerMinute?: number, /** keys each worker remembers as known (default ten times maxNewKeysPerMinute) */ maxKnownKeys?: number, /** the metric counted past maxNewKeysPerMinute (required with it) */ otherwise?: string, indexes?: IndexSpec[] }): SinkDeclaration<R>
  /** one document per record: `_id` the message's ObjectId when it gave one record and one document, else `{ m, r }` (`r`: the record's place in its message; `d` too when `of` gave several) */
  documents<R = any> (spec: SinkOptions & { collection: string, of (record: R, source: RecordSource): OneOrMore<Record<string, unknown>>, indexes?: IndexSpec[], /** the date field retention reads a document's age from (e.g. its arrival); none: kept forever */ expireBy?: string, /** ms a document keeps being written to after its expireBy time: its age counts from then */ expireSpan?: number }): SinkDeclaration<R>
  /** bilateral streams (StreamItem records); `fromSettings` defaults to the stream settings (streamsCollection, streamTimeout, ...), which the definition's settings then include */
  streams<R = StreamItem> (spec?: SinkOptions & { collection?: string, countersCollection?: string, counterMetric?: string, minuteFields?: string[], analytics? (doc: Record<string, any>, endedAt: Date): Record<string, unknown>, of? (record: R, source: RecordSource): OneOrMore<StreamItem> }): SinkDeclaration<R>
}
type ListenKey = 'protocol' | 'host' | 'port' | 'framing' | 'split' | 'distribution' | 'affinity' | 'maxFrameBytes'
/** A collector in one object (docs/writing-collectors.md). `R`: the records the sinks take; `D`: what decode gives (R unless enrich makes R of it). */
export interface CollectorDefinition<R = any, D = R> {
  name: string
  description?: string
  usage?: string
  /** its LoadBalancer defaults; `fixed`: those whose value the format needs (another, from a flag or its environment variable, is refused at start) */
  listen?: Pick<LoadBalancerOptions, ListenKey> & { fixed?: ListenKey[] }
  settings?: Record<string, SettingDeclaration>
  /** the affinity key of a message's bytes, in the master (native receive path: read from the batch entry) */
  key? (data: Buffer): string | number | null | undefined
  /** instead of key, when the key needs memory: made once per master from the workers' settings; `evicted(map)` counts an entry it forgot (events.stateEvicted) */
  affinity? (settings: Record<string, any>, evicted: (map: string) => void): { key (buf: Buffer, start: number, end: number): string | number | null | undefined }
  /** in the master, before the key: the parts of the message whose bytes are buf[start, end), each distributed and counted on its own; null keeps it whole */
  parts? (buf: Buffer, start: number, end: number): Buffer[] | null
  /** pure; return or throw a DecodeError to refuse the message. `arrival`: when the message arrived (the same when delivered again) and its sender */
  decode (message: Message, settings: Record<string, any>, arrival: RecordSource): OneOrMore<D> | DecodeError
  /** each worker's initial state for enrich (default {}) */
  state? (settings: Record<string, any>): Record<string, any>
  /** state per worker, gone with it (what must outlive a worker goes in `keep`); return a DecodeError to refuse the message */
  enrich? (records: D | D[], state: Record<string, any>, source: RecordSource): OneOrMore<R> | DecodeError
  /** in each worker once its database is prepared, before its first message: fills `state` from what the database holds; `heldSince()`: when the master received the oldest message it still holds (epoch ms) */
  warm? (state: Record<string, any>, db: any, settings: Record<string, any>, context: { heldSince (): Promise<number> }): Promise<void> | void
  /** state decode reads and changes through `arrival.kept`, per scope (default: the sender's address, and then distribution hash on it), written with the sinks and read by a worker's heir; collection `<name>_kept` by default; at most `maxEntries` held in memory (default 100,000; what is forgotten is read again) and `maxPerScope` names a scope (default 4,096; past it a set refuses the message: dropped.keptFull); a scope no message used for the retention plus twice `seenEvery` ms (default 5 minutes) expires */
  keep?: { scope? (message: Message): string, collection?: string, maxEntries?: number, maxPerScope?: number, seenEvery?: number, /** the scope an earlier version kept this scope's state under, read when it has none of its own */ scopeBefore? (scope: string): string }
  /** fields the worker's stats add */
  stats? (state: Record<string, any>): Record<string, unknown>
  /** what the state holds, per map */
  memory? (state: Record<string, any>): { held: Record<string, number>, evicted: Record<string, number> }
  tally?: Record<string, (record: R) => string | string[] | null | undefined>
  /** the most records one message may give, from decode and again from enrich (default 1000); more refuses the message whole (dropped.tooManyRecords) */
  maxRecords?: number
  /** the key a decoded record adds to what is stored, or null; with it the workers cap new keys per minute (--max-new-keys-per-minute, dropped.newKeyLimit), known keys always passing */
  cardinality? (record: any): string | number | null | undefined
  sinks: Array<SinkDeclaration<R>>
  /** the file the workers load; default: the file that calls defineCollector */
  file?: string
}
/** What `defineCollector` gives and `collector run` loads: each class is built when first asked for, in the process that runs it. */
export interface CollectorModule {
  description: string
  /** the master (built in the master only) */
  readonly Collector: CollectorClass
  /** its flags: the LoadBalancer's, the database's and the definition's settings */
  readonly Config: typeof LoadBalancerConfig
  /** its workers' class (built in a worker only) */
  readonly Worker: typeof Worker
  readonly definition: Readonly<CollectorDefinition>
  /** the settings of Collector, without building it */
  readonly settings: CollectorSettings
}
export function defineCollector<R = any, D = R> (definition: CollectorDefinition<R, D>): CollectorModule
