'use strict'
// What guarding every counting upsert costs on one server: the updates
// sinks' store (UpdateStore, as a NetFlow collector's per-minute totals use
// it) writing first deliveries of the same changes into two collections of
// the same server, every upsert guarded by its batch watermark (`guardAll`
// on: what MongoDB gets, and what every server got before) and only those
// that may meet a second writer (`guardAll` off: what the embedded server
// gets, storage/write-guard.js), taking turns flush by flush, so both see
// the same machine at the same moments. Each flush carries --batch new
// documents (one `$inc`, `$min`, `$max` each) and updates --batch of those
// already there, so the collections grow to --docs. Prints upserts/s per
// mode, the ratio, and one JSON line.
//
//   node benchmarks/guarded-upserts.js [--docs 20000] [--batch 500]
//
// Against MONGODB_URI when set, else the embedded Java server.
const minimist = require('minimist')
const { MongoClient } = require('mongodb')
const { startJavaServer } = require('../lib/mongo/java-server')
const { UpdateStore } = require('../workers/storage/update-store')

const args = minimist(process.argv.slice(2), { default: { docs: 20000, batch: 500 } })

async function main () {
  const server = process.env.MONGODB_URI ? null : await startJavaServer({ port: 0 })
  const client = await new MongoClient(process.env.MONGODB_URI || server.uri).connect()
  const modes = [{ name: 'every upsert guarded', guardAll: true }, { name: 'first deliveries unguarded', guardAll: false }]
  const runs = modes.map((mode, i) => {
    const collection = client.db(`bench_guarded_${process.pid}_${i}`).collection('flow_minutes')
    return { ...mode, collection, store: new UpdateStore(collection, { what: 'flow upserts', guardAll: () => mode.guardAll }), ms: 0, upserts: 0 }
  })
  try {
    let batchId = 0
    for (let made = 0; made < args.docs; made += args.batch) {
      batchId++
      const mark = { origin: 'bench_1', batchId, seq: batchId, redelivered: false }
      for (let i = 0; i < runs.length; i++) {
        const run = runs[(i + batchId) % runs.length]
        for (let d = made; d < made + args.batch; d++) run.store.update(`f${d}`, { inc: { bytes: 100, packets: 1 }, min: { first: d }, max: { last: d } }, mark)
        for (let d = 0; d < Math.min(made, args.batch); d++) run.store.update(`f${(d * 7919) % made}`, { inc: { bytes: 100, packets: 1 } }, mark)
        run.upserts += run.store.size
        const started = process.hrtime.bigint()
        await run.store.flush()
        run.ms += Number(process.hrtime.bigint() - started) / 1e6
      }
    }
    const rates = {}
    for (const run of runs) {
      const docs = await run.collection.countDocuments()
      if (docs !== args.docs) throw new Error(`${run.name}: ${docs} documents, expected ${args.docs}`)
      rates[run.name] = Math.round(run.upserts / (run.ms / 1000))
      console.log(`${run.name.padEnd(28)} ${String(run.upserts).padStart(7)} upserts  ${String(rates[run.name]).padStart(7)}/s`)
    }
    const ratio = rates[modes[1].name] / rates[modes[0].name]
    console.log(`unguarded / guarded: ${ratio.toFixed(2)} (documents grow to ${args.docs}, ${args.batch} new + up to ${args.batch} updated per flush)`)
    console.log(JSON.stringify({ benchmark: 'guarded-upserts', docs: args.docs, batch: args.batch, rates, ratio: Number(ratio.toFixed(2)) }))
  } finally {
    for (const run of runs) await run.collection.db.dropDatabase().catch(() => {})
    await client.close()
    if (server) await server.stop()
  }
}

main().catch((err) => {
  console.error(err.stack || err.message)
  process.exit(1)
})
