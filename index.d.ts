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

export interface UdpMessage { data: Buffer, rinfo: RemoteInfo }
export interface TcpMessage { data: Buffer, remote: { address: string, port: number } }
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
  framing?: 'newline' | 'octet-counting' | 'auto' | 'length-prefixed' | 'length-prefixed:16' | 'length-prefixed:32' | FramingFn
  maxFrameBytes?: number
  maxConnections?: number
  maxConnectionsPerSource?: number
  idleTimeout?: number
  batchSize?: number
  batchDelay?: number
  maxInFlight?: number
  recvBufferSize?: number
  /** UDP receive path: native recvmmsg (built on install), node:dgram, or auto (native when built) */
  udpReceiver?: 'auto' | 'native' | 'dgram'
  respawnDelay?: number
  maxCrashes?: number
  crashWindow?: number
  drainTimeout?: number
  logger?: Logger
  [key: string]: unknown
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
  custom: Record<string, any> | null
}

export interface Summary {
  name: string
  protocol: string
  /** the UDP receive path in use; null for TCP or when not listening */
  receiver: 'native' | 'dgram' | null
  state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped'
  address: object | null
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
  lost: number
  dropped: { queueFull: number, oversize: number, badFrame: number, partial: number, workerLost: number, shutdown: number, kernel: number, total: number, [reason: string]: number }
  events: Record<string, number>
  restarts: { listener: number, workers: number, rolling: number }
}

export interface Stats extends Summary { workers: WorkerStats[] }

type Callback<T> = (err: Error | null, value?: T) => void

export class LoadBalancer extends EventEmitter {
  constructor (options?: LoadBalancerOptions)
  readonly options: Required<LoadBalancerOptions>
  distribute (workers: WorkerRef[], message: Message): WorkerRef
  key (message: Message): string
  start (cb?: Callback<void>): Promise<void>
  stop (cb?: Callback<void>): Promise<void>
  restart (cb?: Callback<void>): Promise<void>
  address (): object | null
  /** 'native' or 'dgram' for a UDP listener, else null */
  receiver (): 'native' | 'dgram' | null
  stats (): Promise<Stats>
  summary (): Summary
  static protocols: typeof protocols
  static strategies: typeof strategies
}

export class Worker {
  constructor (options?: Record<string, any>)
  options: Record<string, any>
  logger: Logger
  slot: number
  collectorName: string
  leader: boolean
  /** 'processed' (default): acknowledged when doWork returns; 'stored': when you call stored() */
  acknowledge: 'processed' | 'stored'
  /** the checkpoint of the message being processed; pass it to stored() once it is durable */
  checkpoint (): number
  /** whether every message of `checkpoint`'s batch has been through doWork */
  finished (checkpoint: number): boolean
  /** everything up to and including `checkpoint` is durable (Infinity: all doWork has finished) */
  stored (checkpoint: number): void
  /** 12 bytes naming the message being processed, the same when redelivered (an idempotent _id) */
  messageKey (): Buffer | null
  /** the batch of the message being processed; `redelivered`: a worker holding it died */
  delivery (): { seq: number, batchId: number, origin: string, redelivered: boolean } | null
  /** refuse the message being processed: counted in the master's dropped[reason] */
  dropMessage (reason: string): void
  init (): void | Promise<void>
  /** called with the whole of a redelivered batch before its first doWork (read in bulk what deciding each message needs) */
  prepareRedelivered (messages: Message[], delivery: { seq: number, batchId: number, origin: string, redelivered: boolean }): void | Promise<void>
  doWork (message: Message): void | Promise<void>
  flush (): void | Promise<void>
  close (): void | Promise<void>
  stats (): Record<string, any> | Promise<Record<string, any>>
  onLeader (isLeader: boolean): void | Promise<void>
}

export type StreamItem =
  | { fromID: string | number, toID: string | number, IP?: string, highestPacketNum: number, timestamp?: Date | number, fields?: Record<string, unknown> }
  | { sideID: string | number, IP?: string, timestamp?: Date | number, fields: Record<string, unknown> }
  | { endID: string | number, timestamp?: Date | number }

export class StreamWorker extends Worker {
  decode (message: Message): StreamItem | StreamItem[] | null | undefined
}

export interface FlagDefinition {
  alias?: string | string[]
  type?: 'string' | 'integer' | 'number' | 'boolean' | 'port' | 'duration' | 'list' | 'path'
  default?: unknown
  required?: boolean
  description?: string
  choices?: readonly string[]
  min?: number
  max?: number
  env?: string
  secret?: boolean
  group?: string
  keywords?: Record<string, () => unknown>
  validate? (value: any): string | undefined
}

export class LoadBalancerConfig {
  static flags: Readonly<Record<string, FlagDefinition>>
  static usage: string
  static extendFlags (changes: Record<string, Partial<FlagDefinition> | null>): Readonly<Record<string, FlagDefinition>>
  static parse (argv?: string[], env?: NodeJS.ProcessEnv): Readonly<Record<string, any>>
  constructor (argv?: string[], env?: NodeJS.ProcessEnv)
  getConfig (): Readonly<Record<string, any>>
  getDefault (): Readonly<Record<string, any>>
  help (): string
  validate (config: Record<string, any>, given: Set<string>): Array<{ flag?: string, message: string }>
}

export interface ProtocolContext {
  host: string
  port: number
  options: Required<LoadBalancerOptions>
  logger: Logger
  dispatch (message: Message, force?: boolean): boolean
  /** datagrams packed in the batch format (u32 length, u16 port, u8 address length, address, data) in buffer[0, end) */
  dispatchEntries (buffer: Buffer, end: number): void
  drop (reason: string): void
  count (event: string): void
  onCapacity (fn: () => void): void
  fail (error: Error): void
}

export interface Protocol {
  start (ctx: ProtocolContext): Promise<{ address (): object | null, close (): Promise<void> }>
}

export const protocols: {
  register (name: string, protocol: Protocol): void
  get (name: string): Protocol
  has (name: string): boolean
  list (): string[]
}

export const strategies: Readonly<Record<'round-robin' | 'hash' | 'least-loaded', DistributeFn>>
export const FRAMINGS: readonly string[]

export class CollectorError extends Error { code: string }
export class InvalidConfigError extends CollectorError { problems: Array<{ flag?: string, option?: string, message: string }> }
export class InvalidOptionError extends CollectorError { option: string; value: unknown }
export class WorkerDownError extends CollectorError { slot?: number }
export class DecodeError extends CollectorError { constructor (reason: string, message?: string); reason: string }
export class DatabaseError extends CollectorError {}

export function resolveMongo (options?: { uri?: string, env?: NodeJS.ProcessEnv, logger?: Logger, port?: number, host?: string }): Promise<{ uri: string, server: { uri: string, stop (): Promise<void> } | null }>
