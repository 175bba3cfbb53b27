// Compiled (never run) by test/integration/typings.test.js with tsc --strict: a user's
// collector written against index.d.ts alone.
import { LoadBalancer, LoadBalancerConfig, Worker, InvalidOptionError, BufferError, DecodeError, batchEntry, protocols, strategies, defineCollector, sinks } from '../..'
import type { Message, Stats, WorkerRef, CollectorOptions } from '../..'

class StatsdWorker extends Worker {
  counts = new Map<string, number>()
  held: number[] = []

  constructor (options?: Record<string, any>) {
    super(options)
    this.acknowledge = 'stored'
  }

  async prepareRedelivered (messages: Message[], delivery: { origin: string, batchId: number }): Promise<void> {
    this.logger.info({ count: messages.length, origin: delivery.origin }, 'redelivered batch')
  }

  doWork (message: Message): void {
    const [name] = message.data.toString().split(':')
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1)
    const delivery = this.delivery()
    if (delivery && delivery.redelivered) this.dropMessage('duplicate')
    const arrived: number = delivery ? delivery.receivedAt : 0 // the batch's arrival, epoch ms
    if (arrived < 0) throw new DecodeError('beforeEpoch', 'arrived before 1970', { keepState: true })
    const key: Buffer | null = this.messageKey()
    if (key === null) throw new Error('outside doWork')
    this.held.push(this.checkpoint())
  }

  async flush (): Promise<void> {
    const last = this.held[this.held.length - 1]
    this.held = []
    if (last !== undefined && this.finished(last)) this.stored(last)
  }

  stats (): Record<string, number> {
    return { names: this.counts.size }
  }
}

class ByName extends LoadBalancer {
  distribute (workers: WorkerRef[], message: Message): WorkerRef {
    return workers[message.data[0] % workers.length]
  }

  key (message: Message): string {
    return 'rinfo' in message ? message.rinfo.address : message.remote.address
  }
}

class ByPrefix extends LoadBalancer {
  key (message: Message): string {
    return message.data.toString('latin1', 0, 3)
  }

  entryKey (buf: Buffer, offset: number): string {
    const start = batchEntry.dataStart(buf, offset)
    return buf.toString('latin1', start, Math.min(start + 3, batchEntry.dataEnd(buf, offset)))
  }
}
void ByPrefix

// Each comma-separated part of a message distributed on its own; null keeps it whole.
class ByParts extends LoadBalancer {
  parts (buf: Buffer, start: number, end: number): Buffer[] | null {
    const comma = buf.indexOf(0x2c, start)
    return comma === -1 || comma >= end ? null : [buf.subarray(start, comma), buf.subarray(comma + 1, end)]
  }
}
void ByParts

async function main (): Promise<void> {
  const config = new LoadBalancerConfig(['-p', '8125', '-i', '2']).getConfig()
  const lb = new ByName({ ...config, worker: __filename, framing: 'length-prefixed:16', udpReceiver: 'auto', buffer: true, bufferDir: '/var/lib/statsd/buffer', bufferMaxBytes: 256 * 1024 ** 2, bufferSync: 'batch' })
  lb.on('listening', (address: object) => console.log(address))
  try {
    await lb.start()
  } catch (err) {
    if (err instanceof BufferError) console.log(err.code, err.dir)
    throw err
  }
  const stats: Stats = await lb.stats()
  const kernel: number = stats.dropped.kernel
  const accounted = stats.received + stats.replayed + kernel === stats.processed + stats.failed + stats.dropped.total + stats.inFlight + stats.buffered
  if (stats.buffer !== null) console.log(stats.buffer.bytes / stats.buffer.maxBytes, stats.buffer.oldestMs, stats.buffer.damagedRecords, stats.dropped.bufferFull)
  console.log(accounted, stats.oldestUnackedMs, stats.workers.map((w) => w.oldestUnackedMs))
  await lb.stop()
  console.log(protocols.list(), Object.keys(strategies))
  try {
    const bad = new LoadBalancer({ instances: 0 })
    console.log(bad)
  } catch (err) {
    if (err instanceof InvalidOptionError) console.log(err.code, err.option, err.value)
  }
}

void main
void StatsdWorker

// A collector definition, typed end to end: the record type flows from decode to the sinks.
interface Metric { name: string, value: number }
const metricsModule = defineCollector<Metric>({
  name: 'typed-metrics',
  listen: { protocol: 'udp', port: 8125, split: 'lines' },
  settings: { prefix: { type: 'string', default: '', validate: (v: string) => v.endsWith('.') || v === '' ? undefined : 'must end in "."' } },
  key: (data) => data.toString().split(':')[0],
  decode: (message, settings) => ({ name: settings.prefix + message.data.toString().split(':')[0], value: 1 }),
  maxRecords: 1,
  cardinality: (m: Metric) => m.name,
  sinks: [
    sinks.updates<Metric>({ collection: 'metrics', of: (m, { receivedAt }) => ({ _id: `${m.name}|${receivedAt.toISOString()}`, inc: { count: 1 }, last: { last: m.value } }) }),
    sinks.counters<Metric>({ of: (m) => ({ metric: m.name, n: m.value }) })
  ]
})
const options: CollectorOptions = { port: 0, instances: 2, dbMemory: true, flushInterval: 100 }
const typedCollector: LoadBalancer = new metricsModule.Collector(options)
const workerSettings = metricsModule.settings.worker.prefix
const config = new metricsModule.Config(['--prefix', 'prod.']).getConfig()
void typedCollector
void workerSettings
void config
void metricsModule.Worker

// What docs/writing-collectors.md documents a definition may say (QA: listen's affinity, maxFrameBytes
// and fixed, warm, arrival.key() and redelivered, were refused or possibly undefined).
interface Chunk { id: string, text: string, by: string }
interface Joined { id: string, text: string }
const joined = defineCollector<Joined, Chunk>({
  name: 'joined',
  listen: { protocol: 'udp', port: 12201, affinity: 'strict', maxFrameBytes: 8192, split: 'none', fixed: ['split'] },
  keep: { seenEvery: 60000 },
  decode: (message, settings, arrival) => {
    const key = arrival.key()
    const seen = arrival.redelivered === true && arrival.kept ? arrival.kept.get('last') : undefined
    void seen
    return { id: message.data.toString(), text: '', by: key ? key.toString('hex') : '' }
  },
  warm: async (state, db, settings, { heldSince }) => { state.since = await heldSince() },
  enrich: (chunks) => (Array.isArray(chunks) ? chunks : [chunks]).map((c: Chunk) => ({ id: c.id, text: c.text })),
  sinks: [sinks.documents<Joined>({ collection: 'joined', of: (j) => ({ ...j }) })]
})
void joined
