'use strict'

// The collector under verification run for real, through what breaks
// collectors: forked workers SIGKILLed as it works, and its master
// SIGKILLed once with messages it had not had acknowledged, then started
// again on the same disk buffer, which replays them. Three runs of
// `collector run`, one name, one buffer, one database:
//   1. the first part of the samples, workers killed; stopped (drained);
//   2. workers stopped (SIGSTOP: a database stall, as a slow server makes
//      one) and the next part sent: received, on disk, unacknowledged; the
//      master SIGKILLed, its workers let go (SIGCONT: they flush what they
//      hold, as the next run replays the same batches);
//   3. started again: replays that part; the rest sent, workers killed;
//      once every message is accounted for, stopped.
// The counters of runs 1 and 3 add up to every message exactly once: run
// 2's die with it, and what it received is run 3's `replayed`.

const fs = require('node:fs')
const { startCollector, waitUntil } = require('./collector-process')
const { workerKills } = require('./worker-kills')
const { accountedFor } = require('../../lib/master/counters')

const KILL_EVERY_MS = 500
const SETTLE_TIMEOUT_MS = 120000

/**
 * @param {{ target: string, name: string, messages: Buffer[], sender: object, database: { uri: string, database: string },
 *   dir: string, instances: number, rate: number, kills: number, masterKill: boolean, flags: string[], progress(text): void }} o
 * @returns {Promise<{ sent: object[], counts: object[], held: number, replayed: number, killed: number, killedSending: number, logs: string[] }>}
 */
async function exercise (o) {
  const runs = []
  const start = async (port) => {
    const flags = [...o.flags, '--database', o.database.database]
    const run = await startCollector({ target: o.target, name: o.name, port, instances: o.instances, dir: o.dir, run: runs.length + 1, flags, env: { MONGODB_URI: o.database.uri } })
    runs.push(run)
    return run
  }
  const kills = workerKills(KILL_EVERY_MS)
  try {
    return await phases(o, start, kills, runs)
  } finally {
    kills.stop(0)
    for (const run of runs) run.killGroup()
  }
}

async function phases (o, start, kills, runs) {
  const n = o.messages.length
  const first = o.masterKill ? Math.floor(n * 0.45) : n
  const held = o.masterKill ? Math.max(1, Math.floor(n * 0.1)) : 0
  const sent = []
  const one = await start(0)
  o.progress(`run 1: ${first} messages to port ${one.port}, a worker SIGKILLed every ${KILL_EVERY_MS} ms`)
  kills.attach(one)
  kills.resume()
  sent.push(...await o.sender.send(one.port, o.messages.slice(0, first), { rate: o.rate }))
  if (!o.masterKill) return finish(o, one, kills, { sent, counts: [], held: 0, replayed: 0 }, runs)
  await settled(one, { received: first })
  kills.pause()
  const counts = [await stopped(one)]
  sent.push(...await masterKilled(o, await start(one.port), o.messages.slice(first, first + held)))
  const three = await start(one.port)
  o.progress(`run 3: replays them; ${n - first - held} messages more, workers SIGKILLed`)
  kills.attach(three)
  kills.resume()
  sent.push(...await o.sender.send(three.port, o.messages.slice(first + held), { rate: o.rate }))
  return finish(o, three, kills, { sent, counts, held, replayed: held }, runs)
}

// Run 2: its workers stopped, `messages` received and on disk, the master SIGKILLed.
async function masterKilled (o, two, messages) {
  const ready = await waitUntil(async () => { const s = await two.snapshot(); return s && s.stats.workers.filter((w) => w.state === 'ready').length === o.instances && s }, 30000, 'run 2\'s workers')
  const workers = childrenOf(two.pid, ready.stats.workers.map((w) => w.pid))
  for (const pid of workers) signal(pid, 'SIGSTOP')
  o.progress(`run 2: its ${workers.length} workers stopped, ${messages.length} messages sent, then the master SIGKILLed`)
  const sent = await o.sender.send(two.port, messages, { rate: o.rate })
  await waitUntil(async () => {
    const s = (await two.snapshot() || {}).stats
    return s && s.received === messages.length && s.buffer && s.buffer.messages >= messages.length
  }, 30000, 'run 2 to receive the messages and write them to its disk buffer')
  two.kill('SIGKILL')
  await two.exited
  for (const pid of workers) signal(pid, 'SIGCONT')
  return sent
}

// The last run: the kills owed, every message accounted for, stopped.
async function finish (o, run, kills, result, runs) {
  const killedSending = kills.killed // called as the last message is sent
  const killed = await kills.stop(o.kills)
  const last = await settled(run, { received: result.sent.length - result.held - result.counts.reduce((sum, s) => sum + s.received, 0), replayed: result.replayed })
  await stopped(run)
  return { ...result, counts: [...result.counts, last], killed, killedSending, logs: runs.map((r) => r.log) }
}

// Waits until a run received `received` messages (and replayed `replayed`) and every one is accounted for.
async function settled (run, { received, replayed = 0 }) {
  let last = null
  try {
    const snap = await waitUntil(async () => {
      last = (await run.snapshot() || {}).stats || last
      return last && last.received === received && (last.replayed || 0) >= replayed && !last.buffered && accountedFor(last) ? last : null
    }, SETTLE_TIMEOUT_MS, 'every message to be stored or refused')
    return snap
  } catch (err) {
    const seen = last ? { received: last.received, replayed: last.replayed, processed: last.processed, failed: last.failed, inFlight: last.inFlight, buffered: last.buffered, dropped: last.dropped } : null
    throw new Error(`${err.message} (expected ${received} received${replayed ? `, ${replayed} replayed` : ''}; the collector's counters: ${JSON.stringify(seen)}; its log: ${run.log})`)
  }
}

// Drains and stops a run (SIGINT); its final counters.
async function stopped (run) {
  run.kill('SIGINT')
  const { code } = await run.exited
  if (code !== 0) throw new Error(`the collector did not stop cleanly (exit ${code}): see ${run.log}`)
  return run.finalStats()
}

// The worker processes of a master: Linux's list of its children, else the ones its stats name.
function childrenOf (pid, named) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return named
  }
}

function signal (pid, name) {
  try { process.kill(pid, name) } catch {}
}

module.exports = { exercise }
