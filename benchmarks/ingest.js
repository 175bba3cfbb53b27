'use strict'
// Highest loss-free UDP rate: a bare Node receiver vs a LoadBalancer with 2
// workers, measured alternately in the same run (this machine is noisy).
// Usage: node benchmarks/ingest.js [--duration ms] [--rates 50000,100000,...]
//   [--batch-size N] [--batch-delay ms] (default: the LoadBalancer's defaults)
//   [--receivers native,dgram] the master's UDP receive paths to measure,
//   each as its own LoadBalancer (default both; 'native' needs the addon)
//   [--sender c|node] the load generator: c (udp-blast.c, sendmmsg, built
//   here with cc; the default) or node (udp-sender.js). The Node sender
//   needs about as much CPU per datagram as a bare receiver, so on two cores
//   it, not the receiver, sets the ceiling.
//   [--allow [CIDR,...]] also measure each receiver with an allow-list set
//   (as its own LoadBalancer, 'lb-<receiver>+allow'): the given list, or by
//   default the sender's 127.0.0.1 among 20 other prefixes, so that a
//   lookup is not trivially the first entry; prints the ratios to without.
//   [--buffer] also measure each receiver with the disk buffer on
//   ('lb-<receiver>+buffer/interval': buffer: true, the default sync
//   'interval', a temporary bufferDir removed at the end); prints the ratios
//   to without, as --allow does.
//   [--buffer-sync none,interval,batch] the same, one LoadBalancer per sync
//   policy listed ('lb-<receiver>+buffer/<policy>'): what each policy costs.
//   [--reuseport] also measure each receiver with receive 'reuseport'
//   ('lb-<receiver>+reuseport': every worker binds the port, no master
//   hop); prints the ratios to master distribution, loss-free rate and the
//   CPU per datagram of all processes together (master + workers).
//   [--senders N] send from N sockets (source ports) in turn, default 1:
//   reuseport spreads by 4-tuple, so one sender reaches one worker only.
// Rates are nominal; each trial reports the rate the sender achieved, and a
// receiver's loss-free rate is the achieved rate of its best loss-free
// trial. The climb ends when the sender falls 5 % short of a nominal rate:
// above that the run measures the sender.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { fork, execFile } = require('node:child_process')
const minimist = require('minimist')
const { LoadBalancer } = require('..')
const { compile } = require('../native/build')

const args = minimist(process.argv.slice(2), { string: ['rates', 'receivers', 'sender', 'allow', 'buffer-sync'], boolean: ['buffer', 'reuseport'], default: { duration: 2000, instances: 2, receivers: 'native,dgram', sender: 'c', senders: 1 } })
const RECEIVERS = args.receivers.split(',')
const RATES = (args.rates || '25000,50000,75000,100000,125000,150000,175000,200000,225000,250000,275000,300000,350000,400000,450000,500000,600000,700000,800000').split(',').map(Number)
const SETTLE_MS = 400
const ALLOW = args.allow === undefined ? null : args.allow ? args.allow.split(',') : defaultAllowList()
const BUFFER_SYNCS = args['buffer-sync'] ? args['buffer-sync'].split(',') : args.buffer ? ['interval'] : []
const bufferDirs = []

function defaultAllowList () {
  const others = Array.from({ length: 20 }, (_, i) => i % 2 ? `172.${16 + i}.0.0/16` : `2001:db8:${i.toString(16)}::/48`)
  return [...others.slice(0, 13), '127.0.0.1', ...others.slice(13)]
}

const SENDER = senderCommand(args.sender)

function senderCommand (kind) {
  if (kind === 'node') return [process.execPath, [path.join(__dirname, 'udp-sender.js')]]
  if (kind !== 'c') throw new Error(`--sender must be c or node, got ${kind}`)
  const binary = path.join(__dirname, '..', 'native', 'build', 'udp-blast')
  compile(path.join(__dirname, 'udp-blast.c'), binary)
  return [binary, []]
}

function send (port, rate) {
  return new Promise((resolve, reject) => {
    execFile(SENDER[0], [...SENDER[1], port, rate, args.duration, 200, args.senders], (err, stdout) => {
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

// bufferSync: the disk buffer on, with that policy, in a directory of its
// own on the same file system as os.tmpdir() (removed at exit).
async function startBalancer (udpReceiver, { allow, bufferSync, receive } = {}) {
  const buffer = bufferSync ? { buffer: true, bufferSync, bufferDir: fs.mkdtempSync(path.join(os.tmpdir(), 'ingest-buffer-')) } : {}
  if (buffer.bufferDir) bufferDirs.push(buffer.bufferDir)
  const lb = new LoadBalancer({ worker: path.join(__dirname, 'count-worker.js'), instances: args.instances, port: 0, maxInFlight: 200000, batchSize: args['batch-size'], batchDelay: args['batch-delay'], udpReceiver, allow, receive, ...buffer })
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
    // Only one balancer receives at a time, so the process's CPU is its master's.
    cpu: async () => ({ master: cpuMs(process.cpuUsage()), workers: (await lb.stats()).workers.reduce((sum, w) => sum + w.custom.cpuMs, 0) }),
    close: async () => { clearInterval(timer); await lb.stop() }
  }
}

// A Node without dgram reusePort (< 22.12) refuses it with the dgram receiver: said, not measured.
async function addReuseport (targets, receiver) {
  try {
    targets.push([`lb-${receiver}+reuseport`, await startBalancer(receiver, { receive: 'reuseport' })])
  } catch (err) {
    if (err.code !== 'ERR_INVALID_OPTION') throw err
    console.log(`lb-${receiver}+reuseport not measured: ${err.message}`)
  }
}

// CPU per datagram of each process, from CPU time consumed during the trial
// (sending and settling): where the receiving side's time goes.
async function trial (target, rate) {
  await target.reset()
  const before = await target.cpu()
  const { sent, ms, cpuMs: senderMs } = await send(target.port, rate)
  const got = await settle(target.count)
  const after = await target.cpu()
  const usPerDatagram = { sender: +(1000 * senderMs / sent).toFixed(2) }
  for (const key of Object.keys(after)) usPerDatagram[key] = +(1000 * (after[key] - before[key]) / sent).toFixed(2)
  const achieved = Math.round(sent * 1000 / ms)
  return { sent, got, achieved, senderLimited: achieved < rate * 0.95, lossFree: got >= sent, usPerDatagram }
}

async function main () {
  const targets = [['bare', await startBare()]]
  for (const receiver of RECEIVERS) {
    targets.push([`lb-${receiver}`, await startBalancer(receiver)])
    if (ALLOW) targets.push([`lb-${receiver}+allow`, await startBalancer(receiver, { allow: ALLOW })])
    for (const sync of BUFFER_SYNCS) targets.push([`lb-${receiver}+buffer/${sync}`, await startBalancer(receiver, { bufferSync: sync })])
    if (args.reuseport) await addReuseport(targets, receiver)
  }
  // One discarded trial each first: a cold master or worker (no JIT yet)
  // loses datagrams at rates it sustains once warm.
  for (const [, target] of targets) await trial(target, RATES[0])
  const rows = []
  const cpu = {}
  const lossFreeCpu = Object.fromEntries(targets.map(([name]) => [name, {}])) // name → nominal rate → µs per datagram
  const best = Object.fromEntries(targets.map(([name]) => [name, 0]))
  const alive = Object.fromEntries(targets.map(([name]) => [name, true]))
  let senderLimited = false
  for (const rate of RATES) {
    const row = { rate }
    for (const [name, target] of targets) {
      if (!alive[name]) continue
      const r = await trial(target, rate)
      row[name] = `${r.got}/${r.sent} @${Math.round(r.achieved / 1000)}k`
      if (r.lossFree) lossFreeCpu[name][rate] = r.usPerDatagram
      if (r.lossFree && r.achieved > best[name]) {
        best[name] = r.achieved
        cpu[name] = { rate: r.achieved, ...r.usPerDatagram }
      }
      if (!r.lossFree) alive[name] = false // a rate that loses ends that side's climb
      if (r.senderLimited) senderLimited = true
    }
    rows.push(row)
    if (senderLimited || !Object.values(alive).some(Boolean)) break
  }
  const mb = (b) => Math.round(b / 1048576)
  const memory = { bare: mb(await targets[0][1].rss()) }
  for (const [name, target] of targets.slice(1)) {
    const peaks = await target.peaks()
    memory[name] = { master: mb(peaks.master), workers: peaks.workers.map(mb) }
    await target.close()
  }
  targets[0][1].close()
  console.table(rows)
  if (senderLimited) console.log(`the ${args.sender} sender fell short of its nominal rate: receivers still loss-free there are at least as fast as shown`)
  const ratios = {}
  for (const [name] of targets.slice(1)) {
    ratios[name] = best.bare ? Number((best[name] / best.bare).toFixed(3)) : 0
    console.log(`highest loss-free rate: bare ${best.bare}/s, LoadBalancer(${args.instances} workers, ${name.slice(3)} receiver) ${best[name]}/s, ratio ${ratios[name].toFixed(2)} (target ≥ 0.80)`)
  }
  for (const [name, c] of Object.entries(cpu)) {
    const parts = Object.entries(c).filter(([k]) => k !== 'rate' && k !== 'sender').map(([k, v]) => `${k} ${v}`).join(' + ')
    console.log(`CPU µs per datagram, ${name} at ${c.rate}/s: ${parts} (sender ${c.sender})`)
  }
  const allowRatios = ALLOW ? variantRatios(best, lossFreeCpu, 'allow', `allow-list (${ALLOW.length} entries)`) : undefined
  const bufferRatios = BUFFER_SYNCS.length ? Object.fromEntries(BUFFER_SYNCS.map((sync) => [sync, variantRatios(best, lossFreeCpu, `buffer/${sync}`, `disk buffer (sync ${sync})`)])) : undefined
  const reuseportRatios = args.reuseport ? variantRatios(best, lossFreeCpu, 'reuseport', `receive reuseport (${args.senders} senders)`) : undefined
  console.log(`peak RSS MiB: ${JSON.stringify(memory)}`)
  console.log(JSON.stringify({ bench: 'ingest', sender: args.sender, senders: args.senders, senderLimited, allow: ALLOW || undefined, bufferSync: BUFFER_SYNCS.length ? BUFFER_SYNCS : undefined, lossFree: best, ratios, allowRatios, bufferRatios, reuseportRatios, peakRssMiB: memory, cpuUsPerDatagram: cpu, rows }))
}

// A variant ('allow', 'buffer/interval', 'reuseport') against the plain
// balancer, per receiver: loss-free rate, and master CPU per datagram at
// the highest rate both were loss-free at (CPU per datagram falls with the
// rate, as batches fill; target: within 10 %), and that of master and
// workers together (reuseport moves the receiving into the workers).
function variantRatios (best, lossFreeCpu, variant, label) {
  const out = {}
  const total = (us) => +(us.master + us.workers).toFixed(2)
  for (const receiver of RECEIVERS) {
    const without = `lb-${receiver}`
    const withVariant = `${without}+${variant}`
    if (!lossFreeCpu[withVariant]) continue
    const rate = best[without] ? +(best[withVariant] / best[without]).toFixed(3) : 0
    const common = Object.keys(lossFreeCpu[without]).filter((r) => lossFreeCpu[withVariant][r]).map(Number)
    const at = common.length ? Math.max(...common) : null
    const [a, b] = at ? [lossFreeCpu[withVariant][at], lossFreeCpu[without][at]] : []
    const master = at ? +(a.master / b.master).toFixed(3) : null
    const all = at ? +(total(a) / total(b)).toFixed(3) : null
    const name = variant.split('/')[0]
    out[receiver] = { lossFreeRate: rate, masterCpuAt: at, masterCpuUs: at ? { [name]: a.master, without: b.master } : null, masterCpuPerDatagram: master, allCpuUs: at ? { [name]: total(a), without: total(b) } : null, allCpuPerDatagram: all }
    console.log(`${label}, ${receiver} receiver: loss-free rate ${best[withVariant]}/s vs ${best[without]}/s without (ratio ${rate}); at ${at}/s nominal, CPU µs per datagram: master ${at && a.master} vs ${at && b.master} (ratio ${master}), master + workers ${at && total(a)} vs ${at && total(b)} (ratio ${all})`)
  }
  return out
}

process.on('exit', () => {
  for (const dir of bufferDirs) fs.rmSync(dir, { recursive: true, force: true })
})

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
