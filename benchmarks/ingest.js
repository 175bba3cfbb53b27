'use strict'
// Highest loss-free UDP rate: a bare Node receiver vs a LoadBalancer with 2
// workers, measured alternately in the same run (this machine is noisy).
// Usage: node benchmarks/ingest.js [--duration ms] [--rates 50000,100000,...]
//   [--batch-size N] [--batch-delay ms] (default: the LoadBalancer's defaults)
const path = require('node:path')
const { fork, execFile } = require('node:child_process')
const minimist = require('minimist')
const { LoadBalancer } = require('..')

const args = minimist(process.argv.slice(2), { string: ['rates'], default: { duration: 2000, instances: 2 } })
const RATES = (args.rates || '25000,50000,75000,100000,125000,150000,175000,200000,225000,250000,275000,300000,350000,400000').split(',').map(Number)
const SETTLE_MS = 400

function send (port, rate) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(__dirname, 'udp-sender.js'), port, rate, args.duration], (err, stdout) => {
      if (err) return reject(err)
      resolve(JSON.parse(stdout))
    })
  })
}

const cpuMs = (usage) => (usage.user + usage.system) / 1000

async function settle (read) {
  let last = -1
  let value = await read()
  while (value !== last) {
    last = value
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    value = await read()
  }
  return value
}

function startBare () {
  const child = fork(path.join(__dirname, 'bare-receiver.js'))
  const ask = (m) => new Promise((resolve) => { child.once('message', resolve); child.send(m) })
  return new Promise((resolve) => child.once('message', ({ port }) => resolve({
    port,
    count: async () => (await ask('count')).received,
    rss: async () => (await ask('count')).rss,
    cpu: async () => ({ receiver: (await ask('count')).cpuMs }),
    reset: () => child.send('reset'),
    close: () => child.send('exit')
  })))
}

async function startBalancer () {
  const lb = new LoadBalancer({ worker: path.join(__dirname, 'count-worker.js'), instances: args.instances, port: 0, maxInFlight: 200000, batchSize: args['batch-size'], batchDelay: args['batch-delay'] })
  await lb.start()
  let base = 0
  let masterPeak = 0
  const timer = setInterval(() => { masterPeak = Math.max(masterPeak, process.memoryUsage().rss) }, 100)
  const processed = async () => (await lb.stats()).processed
  return {
    port: lb.address().port,
    count: async () => (await processed()) - base,
    reset: async () => { base = await processed() },
    peaks: async () => ({ master: masterPeak, workers: (await lb.stats()).workers.map((w) => w.custom.peakRss) }),
    cpu: async () => ({ master: cpuMs(process.cpuUsage()), workers: (await lb.stats()).workers.reduce((sum, w) => sum + w.custom.cpuMs, 0) }),
    close: async () => { clearInterval(timer); await lb.stop() }
  }
}

// CPU per datagram of each process, from CPU time consumed during the trial
// (sending and settling): where the receiving side's time goes.
async function trial (target, rate) {
  await target.reset()
  const before = await target.cpu()
  const { sent, cpuMs: senderMs } = await send(target.port, rate)
  const got = await settle(target.count)
  const after = await target.cpu()
  const usPerDatagram = { sender: +(1000 * senderMs / sent).toFixed(2) }
  for (const key of Object.keys(after)) usPerDatagram[key] = +(1000 * (after[key] - before[key]) / sent).toFixed(2)
  return { sent, got, lossFree: got >= sent, usPerDatagram }
}

async function main () {
  const bare = await startBare()
  const lb = await startBalancer()
  // One discarded trial each first: a cold master or worker (no JIT yet)
  // loses datagrams at rates it sustains once warm.
  for (const target of [bare, lb]) await trial(target, RATES[0])
  const rows = []
  const cpu = {}
  const best = { bare: 0, lb: 0 }
  const alive = { bare: true, lb: true }
  for (const rate of RATES) {
    const row = { rate }
    for (const [name, target] of [['bare', bare], ['lb', lb]]) {
      if (!alive[name]) continue
      const r = await trial(target, rate)
      row[name] = `${r.got}/${r.sent}`
      if (r.lossFree) {
        best[name] = rate
        cpu[name] = { rate, ...r.usPerDatagram }
      }
      else alive[name] = false // a rate that loses ends that side's climb
    }
    rows.push(row)
    if (!alive.bare && !alive.lb) break
  }
  const peaks = await lb.peaks()
  const bareRss = await bare.rss()
  await lb.close()
  bare.close()
  console.table(rows)
  const ratio = best.bare ? best.lb / best.bare : 0
  const mb = (b) => Math.round(b / 1048576)
  console.log(`highest loss-free rate: bare ${best.bare}/s, LoadBalancer(${args.instances} workers) ${best.lb}/s, ratio ${ratio.toFixed(2)} (target ≥ 0.80)`)
  if (cpu.bare && cpu.lb) {
    const bareSide = cpu.bare.receiver
    const lbSide = cpu.lb.master + cpu.lb.workers
    console.log(`CPU µs per datagram at the highest loss-free rate of each: bare receiver ${bareSide} (+ sender ${cpu.bare.sender}) at ${cpu.bare.rate}/s; LoadBalancer master ${cpu.lb.master} + workers ${cpu.lb.workers} = ${lbSide.toFixed(2)} (+ sender ${cpu.lb.sender}) at ${cpu.lb.rate}/s`)
  }
  console.log(`peak RSS: master ${mb(peaks.master)} MiB, workers ${peaks.workers.map(mb).join(', ')} MiB, bare receiver ${mb(bareRss)} MiB`)
  console.log(JSON.stringify({ bench: 'ingest', bareLossFree: best.bare, lbLossFree: best.lb, ratio: Number(ratio.toFixed(3)), masterPeakRssMiB: mb(peaks.master), workerPeakRssMiB: peaks.workers.map(mb), cpuUsPerDatagram: cpu, rows }))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
