'use strict'
// What the shard-ready stream indexes cost on one server: packet upserts
// into two collections of the same server, the layout before `pairKey`
// (unique { openKey }, { flowKey }; the upsert filters on flowKey) and the
// current one (unique { pairKey, openKey }, { pairKey, flowKey }; the upsert
// filters on both), in 1,000-op unordered bulkWrites taking turns, so both
// see the same machine at the same moments. The first pass inserts every
// stream, the later ones update them. Prints upserts/s per layout and phase,
// and the ratio.
//
//   node benchmarks/stream-indexes.js [--streams 30000] [--passes 4]
//
// Against MONGODB_URI when set, else the embedded Java server.
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer } = require('../lib/mongo/java-server')
const { packetOp } = require('../workers/storage/stream-ops')
const { streamSchema } = require('../workers/storage/schemas')
const { entryOf } = require('../workers/storage/packet-coalescer')

const args = minimist(process.argv.slice(2), { default: { streams: 30000, passes: 4 } })
const BATCH = 1000

// The current layout is the schema's; the earlier one differs only in its
// two unique indexes and in the upsert's filter.
const current = streamSchema.indexes()
const LAYOUTS = {
  'before pairKey': {
    indexes: [[{ openKey: 1 }, { unique: true }], [{ flowKey: 1 }, { unique: true }], ...current.filter(([key]) => !('pairKey' in key))],
    op: (entry, now) => {
      const op = packetOp(entry, 'from', now)
      delete op.updateOne.filter.pairKey
      return op
    }
  },
  'pairKey (current)': { indexes: current, op: (entry, now) => packetOp(entry, 'from', now) }
}

function batch (op, start, pass, now) {
  const ops = []
  for (let s = start; s < Math.min(start + BATCH, args.streams); s++) {
    const fromID = `a${s}`
    const toID = `b${s}`
    ops.push(op(entryOf({ fromID, toID, IP: '10.0.0.1', highestPacketNum: pass + 1, timestamp: now }), now))
  }
  return ops
}

async function main () {
  const server = process.env.MONGODB_URI ? null : await startJavaServer({ port: 0 })
  const client = await new MongoClient(process.env.MONGODB_URI || server.uri).connect()
  const names = Object.keys(LAYOUTS)
  const runs = names.map((name, i) => ({ name, ...LAYOUTS[name], collection: client.db(`bench_stream_indexes_${process.pid}_${i}`).collection('streams'), ms: { insert: 0, update: 0 } }))
  try {
    for (const run of runs) for (const [key, options] of run.indexes) await run.collection.createIndex(key, options)
    let turn = 0
    for (let pass = 0; pass < args.passes; pass++) {
      const phase = pass === 0 ? 'insert' : 'update'
      for (let start = 0; start < args.streams; start += BATCH) {
        turn++
        for (let i = 0; i < runs.length; i++) {
          const run = runs[(i + turn) % runs.length]
          const ops = batch(run.op, start, pass, new Date())
          const started = process.hrtime.bigint()
          await run.collection.bulkWrite(ops, { ordered: false })
          run.ms[phase] += Number(process.hrtime.bigint() - started) / 1e6
        }
      }
    }
    console.log(`${args.streams} streams, ${args.passes} passes (1 insert, ${args.passes - 1} update), ${BATCH}-op bulkWrites taking turns`)
    const rates = {}
    for (const run of runs) {
      const docs = await run.collection.countDocuments()
      if (docs !== args.streams) throw new Error(`${run.name}: ${docs} documents, expected ${args.streams}`)
      rates[run.name] = { insert: Math.round(args.streams / (run.ms.insert / 1000)), update: Math.round(args.streams * (args.passes - 1) / (run.ms.update / 1000)) }
      console.log(`${run.name.padEnd(18)}  insert ${String(rates[run.name].insert).padStart(6)}/s  update ${String(rates[run.name].update).padStart(6)}/s`)
    }
    const [before, after] = names.map((name) => rates[name])
    console.log(`current / before: insert ${(after.insert / before.insert).toFixed(2)}, update ${(after.update / before.update).toFixed(2)}`)
    console.log(JSON.stringify({ benchmark: 'stream-indexes', streams: args.streams, rates }))
  } finally {
    for (const run of runs) await run.collection.drop().catch(() => {})
    await client.close()
    if (server) await server.stop()
  }
}

main().catch((err) => {
  console.error(err.message)
  process.exit(1)
})
