// Compiled by test/integration/typings.test.js and run by it with `collector run`: a
// collector written in TypeScript from docs/writing-collectors.md and index.d.ts alone.
import { defineCollector, sinks, DecodeError } from 'collector-cluster'

/** One datagram `<name> [n]`: n (default 1) counted under `<name>.<unit>`. */
interface Tally { metric: string, n: number }

export = defineCollector<Tally>({
  name: 'tally',
  description: 'counts "<name> [n]" datagrams per minute',
  usage: 'collector run ./tally [options]',
  listen: { protocol: 'udp' },
  settings: {
    unit: { type: 'string', default: 'events', group: 'Tally', description: 'suffix of every counter name', choices: ['events', 'hits'] }
  },
  decode: (message, settings) => {
    const [name, n = '1'] = message.data.toString('utf8').trim().split(/\s+/)
    if (!/^[a-z]+$/.test(name) || !/^\d+$/.test(n)) return new DecodeError('badTally', `not "<name> [n]": ${name}`)
    return { metric: `${name}.${String(settings.unit)}`, n: Number(n) }
  },
  sinks: [sinks.counters<Tally>({ of: (tally) => tally })]
})
