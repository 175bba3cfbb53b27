'use strict'
// What kernel steering costs a datagram: the same receiver, fed at the same
// rate by the C sender (one socket: one flow, so the jhash map decides once
// and every later datagram pays conntrack's lookup and the NAT rewrite, as
// the datagrams of a long RTP/RTCP flow do), once directly (no NAT table
// loaded, so no connection tracking) and once through an nftables DNAT
// rule with a jhash map (the rule that spreads a port over several masters
// on one host, docs/scaling.md), alternating, in a network namespace of
// its own so the machine's own firewall is untouched. Prints, per mode, the
// datagrams received and lost and the whole machine's CPU per datagram
// (from /proc/stat, so the kernel's share counts too), and the ratio.
//
//   node benchmarks/dnat-cost.js [--rate 100000] [--duration 3000] [--rounds 3]
//
// Needs root and nftables (as the multi-host test does).
const { execFile, execFileSync, fork } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const minimist = require('minimist')
const { compile } = require('../native/build')

const args = minimist(process.argv.slice(2), { default: { rate: 100000, duration: 3000, rounds: 3 } })
const INSIDE = 'COLLECTOR_DNAT_BENCH_NS'
const STEERED_PORT = 5005
const TICK_US = 1e6 / 100 // /proc/stat counts in USER_HZ (100 on Linux)

/** Busy and total CPU time of the machine so far, in µs. */
function cpuNow () {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const idle = fields[3] + fields[4]
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: (total - idle) * TICK_US, total: total * TICK_US }
}

const sorted = (values) => values.slice().sort((a, b) => a - b)
const median = (values) => values[Math.floor(values.length / 2)]

function send (binary, port) {
  return new Promise((resolve, reject) => {
    execFile(binary, [String(port), String(args.rate), String(args.duration)], (err, stdout) => err ? reject(err) : resolve(JSON.parse(stdout)))
  })
}

function ask (child, message) {
  return new Promise((resolve) => {
    child.once('message', resolve)
    child.send(message)
  })
}

async function settledCount (receiver) {
  let last = -1
  let { received } = await ask(receiver, 'count')
  while (received !== last) {
    last = received
    await new Promise((resolve) => setTimeout(resolve, 300))
    received = (await ask(receiver, 'count')).received
  }
  return received
}

async function measure () {
  const binary = path.join(__dirname, '..', 'native', 'build', 'udp-blast')
  compile(path.join(__dirname, 'udp-blast.c'), binary)
  execFileSync('ip', ['link', 'set', 'lo', 'up'])
  const receiver = fork(path.join(__dirname, 'bare-receiver.js'))
  const { port } = await new Promise((resolve) => receiver.once('message', resolve))
  // Locally sent datagrams pass the output hook: DNAT the steered port onto
  // the receiver's, through a jhash map as a multi-master host would. The
  // table exists only during the steered runs: while any NAT table is
  // loaded, connection tracking runs for every datagram of the namespace,
  // direct ones too.
  const steer = `table ip steer {
  chain out {
    type nat hook output priority -100; policy accept;
    ip daddr 127.0.0.1 udp dport ${STEERED_PORT} dnat ip to jhash ip saddr . udp sport mod 2 map { 0 : 127.0.0.1 . ${port}, 1 : 127.0.0.1 . ${port} }
  }
}
`
  const modes = [
    ['direct', port, () => execFileSync('nft', ['delete', 'table', 'ip', 'steer'], { stdio: 'ignore' })],
    ['nftables DNAT, jhash', STEERED_PORT, () => execFileSync('nft', ['-f', '-'], { input: steer })]
  ]
  execFileSync('nft', ['-f', '-'], { input: steer }) // so that the first delete finds it
  const results = new Map(modes.map(([name]) => [name, []]))
  for (let round = 0; round < args.rounds; round++) {
    for (const [name, target, setUp] of modes) {
      setUp()
      receiver.send('reset')
      await settledCount(receiver)
      const before = cpuNow()
      const receiverBefore = (await ask(receiver, 'count')).cpuMs
      const sent = await send(binary, target)
      const received = await settledCount(receiver)
      const after = cpuNow()
      const receiverCpuMs = (await ask(receiver, 'count')).cpuMs - receiverBefore
      results.get(name).push({
        sent: sent.sent,
        received,
        cpuUsPerDatagram: (after.busy - before.busy) / received,
        processUsPerDatagram: (sent.cpuMs + receiverCpuMs) * 1000 / received
      })
    }
  }
  receiver.send('exit')
  return results
}

function report (results) {
  console.log(`${args.rounds} rounds of ${args.duration} ms at ${args.rate}/s, modes alternating; CPU: the whole machine's busy time per datagram received`)
  console.log('sender+receiver: the two processes\' own CPU (the sender\'s includes the kernel\'s loopback delivery); machine: every core\'s busy time')
  console.log('mode                    sent       received   lost     µs/datagram sender+receiver (median, range)   machine (median)')
  const medians = {}
  for (const [name, runs] of results) {
    const own = sorted(runs.map((r) => r.processUsPerDatagram))
    const machine = sorted(runs.map((r) => r.cpuUsPerDatagram))
    medians[name] = { processes: median(own), machine: median(machine) }
    const sent = runs.reduce((a, r) => a + r.sent, 0)
    const received = runs.reduce((a, r) => a + r.received, 0)
    console.log(`${name.padEnd(22)}  ${String(sent).padEnd(9)}  ${String(received).padEnd(9)}  ${String(sent - received).padEnd(7)}  ${median(own).toFixed(2)} (${own[0].toFixed(2)}–${own[own.length - 1].toFixed(2)})`.padEnd(100) + median(machine).toFixed(2))
  }
  const [direct, steered] = Object.values(medians)
  console.log(`steering costs ${(steered.processes - direct.processes).toFixed(2)} µs per datagram in the two processes (${((steered.processes / direct.processes - 1) * 100).toFixed(1)} %), ${(steered.machine - direct.machine).toFixed(2)} µs on the whole machine; the single-master path runs without it`)
  console.log(JSON.stringify({ benchmark: 'dnat-cost', rate: args.rate, duration: args.duration, medians }))
}

async function main () {
  if (process.env[INSIDE]) return report(await measure())
  const { Lab, netnsUnavailable } = require('../test/helpers/netns')
  const why = netnsUnavailable()
  if (why) {
    console.error(`dnat-cost: ${why}`)
    process.exit(2)
  }
  const lab = new Lab()
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      lab.destroy() // the namespace outlives a killed run otherwise
      process.exit(1)
    })
  }
  try {
    execFileSync('ip', ['netns', 'exec', lab.router, process.execPath, __filename, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, [INSIDE]: '1' } })
  } finally {
    lab.destroy()
  }
}

main().catch((err) => {
  console.error(err.message)
  process.exit(1)
})
