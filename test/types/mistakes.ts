// Compiled (never run) by test/integration/typings.test.js. Each line under an
// expect-error directive is a mistake the typings must refuse: if one
// compiles, tsc reports the unused directive and the test fails.
import { LoadBalancer, LoadBalancerConfig, Worker, defineCollector, sinks } from 'collector-cluster'

// @ts-expect-error a misspelled option key
export const typo = new LoadBalancer({ worker: './w.js', instnces: 4 })
// @ts-expect-error an option of the wrong type
export const wrongType = new LoadBalancer({ worker: './w.js', port: '9999' })
// @ts-expect-error a distribution that is not a strategy
export const badStrategy = new LoadBalancer({ worker: './w.js', distribution: 'random' })
// @ts-expect-error a MongoDB option on a plain LoadBalancer
export const notMongo = new LoadBalancer({ worker: './w.js', mongoUri: 'mongodb://x' })
// @ts-expect-error a sync policy that does not exist
export const badSync = new LoadBalancer({ worker: './w.js', buffer: true, bufferSync: 'always' })

const lb = new LoadBalancer({ worker: './w.js' })
// @ts-expect-error listenerError gives (error, delay), not a string
lb.on('listenerError', (error: string) => error)
// @ts-expect-error an event LoadBalancer never emits
lb.on('listenning', () => {})
lb.on('workerExit', (info) => info.pid)
// @ts-expect-error doStart is a subclass hook, not public
void lb.doStart()

// @ts-expect-error a flag type that does not exist
export const BadFlags = LoadBalancerConfig.extendFlags({ size: { type: 'bytes' } })

const tally = defineCollector({ name: 'tally', decode: () => null, sinks: [sinks.counters({ of: () => ({ metric: 'm' }) })] })
export const mongo = new tally.Collector({ worker: './w.js', mongoUri: 'mongodb://x', database: 'd', dbMemory: true })
// @ts-expect-error a misspelled collector option
export const collectorTypo = new tally.Collector({ instnces: 2 })
// @ts-expect-error a definition needs its sinks
export const noSinks = defineCollector({ name: 'x', decode: () => null })
// @ts-expect-error decode is a function of the message
export const notDecode = defineCollector({ name: 'x', decode: 'json', sinks: [] })
// @ts-expect-error a counters sink gives increments, not a number
export const badCount = sinks.counters({ of: () => 3 })

export class Plain extends Worker {
  // @ts-expect-error delivery() may be null outside doWork
  doWork (): void { const seq: number = this.delivery().seq; void seq }
}

interface Reading { host: string, value: number }
// @ts-expect-error decode gives records the sinks take: a misspelled field (QA: it compiled)
export const wrongRecord = defineCollector<Reading>({ name: 'r', decode: () => ({ hots: 'a', value: 1 }), sinks: [sinks.documents<Reading>({ collection: 'r', of: (r) => ({ ...r }) })] })
// @ts-expect-error a listen key a definition cannot set
export const badListen = defineCollector({ name: 'r', listen: { maxConnections: 5 }, decode: () => null, sinks: [] })
