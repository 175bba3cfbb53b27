'use strict'

const { readAllStats, writesOf } = require('../stats-file')
const { commandConfig, defaultStatsDir, formatTable, formatUptime, formatBytes } = require('./common')

const Config = commandConfig('collector top [--once] [--interval 1s] [--all]', {
  once: { type: 'boolean', default: false, description: 'print one frame and exit' },
  interval: { type: 'duration', min: 100, default: 1000, description: 'time between frames' },
  all: { type: 'boolean', default: false, description: 'also show collectors that stopped updating' }
})

const STALE_AFTER_MS = 10000
const CLEAR = '\x1b[H\x1b[2J'

const COLUMNS = [
  { key: 'name', title: 'COLLECTOR / WORKER', align: 'left' },
  { key: 'pid', title: 'PID' },
  { key: 'state', title: 'STATE', align: 'left' },
  { key: 'received', title: 'RECV/S' },
  { key: 'processed', title: 'PROC/S' },
  { key: 'dropped', title: 'DROP/S' },
  { key: 'droppedTotal', title: 'DROPPED' },
  { key: 'droppedKernel', title: 'KERNEL' },
  { key: 'lost', title: 'LOST' },
  { key: 'inFlight', title: 'IN-FLIGHT' },
  { key: 'failed', title: 'FAILED' },
  { key: 'writes', title: 'WRITES/S' },
  { key: 'writesTotal', title: 'WRITES' }
]

// Shown when a collector on screen has a disk buffer.
const BUFFER_COLUMNS = [
  { key: 'buffered', title: 'BUFFERED' },
  { key: 'bufferAge', title: 'BUF-AGE' },
  { key: 'bufferDisk', title: 'BUF-DISK/MAX', align: 'left' },
  { key: 'replayed', title: 'REPLAYED' },
  { key: 'bufferFull', title: 'BUF-FULL' }
]

/** `collector top`: refreshes every --interval like mongotop; --once for one frame. */
async function run (argv) {
  const config = Config.parse(argv)
  if (config.help) return Config.printHelp()
  const dir = defaultStatsDir()
  if (config.once) {
    process.stdout.write(await frame(dir, config))
    return 0
  }
  const tty = process.stdout.isTTY
  const draw = async () => process.stdout.write((tty ? CLEAR : '\n') + await frame(dir, config) + (tty ? '\npress q to quit\n' : ''))
  await draw()
  const timer = setInterval(draw, config.interval)
  return new Promise((resolve) => {
    const quit = () => {
      clearInterval(timer)
      if (process.stdin.isTTY) process.stdin.setRawMode(false)
      process.stdin.pause()
      resolve(0)
    }
    process.once('SIGINT', quit)
    if (process.stdin.isTTY) {
      // Raw mode: q (or Ctrl-C, which raw mode delivers as a byte) quits at once.
      process.stdin.setRawMode(true)
      process.stdin.resume()
      process.stdin.on('data', (key) => { if (key[0] === 0x71 || key[0] === 0x51 || key[0] === 0x03) quit() })
    }
  })
}

/** One screen: a line per collector and one per worker. */
async function frame (dir, config) {
  const snapshots = (await readAllStats(dir)).filter((s) => config.all || (s.state !== 'stopped' && s.age < STALE_AFTER_MS))
  const header = `collector top — ${new Date().toISOString()} — ${dir}\n\n`
  if (snapshots.length === 0) return header + 'no running collectors\n'
  const columns = snapshots.some((s) => s.stats.buffer) ? [...COLUMNS, ...BUFFER_COLUMNS] : COLUMNS
  return header + formatTable(columns, snapshots.flatMap(rows))
}

function rows (snap) {
  const { stats: s, rates: r } = snap
  const workers = s.workers.map((w) => workerRow(w, r))
  const writes = sum(workers.map((w) => w.writes))
  const live = sum(workers.map((w) => w.writesTotal))
  const writesTotal = live === null ? null : live + (snap.retiredWrites || 0) // and those of workers since replaced
  const collector = {
    name: snap.name,
    pid: snap.pid,
    state: s.state,
    received: r.received,
    processed: r.processed,
    dropped: r.dropped,
    droppedTotal: s.dropped.total,
    // Older stats files (before dropped.kernel) have none.
    droppedKernel: s.dropped.kernel === undefined ? null : s.dropped.kernel,
    lost: s.lost,
    inFlight: s.inFlight,
    failed: s.failed,
    writes,
    writesTotal,
    ...(s.buffer ? bufferCells(s) : {})
  }
  return [collector, ...workers]
}

function bufferCells (s) {
  return {
    buffered: s.buffered,
    bufferAge: formatUptime(s.buffer.oldestMs),
    bufferDisk: `${formatBytes(s.buffer.bytes)}/${formatBytes(s.buffer.maxBytes)}`,
    replayed: s.replayed,
    bufferFull: s.dropped.bufferFull
  }
}

function workerRow (w, rates) {
  const rate = rates.workers.find((x) => x.slot === w.slot && x.pid === w.pid) || {}
  return {
    name: `  worker ${w.slot}`,
    pid: w.pid,
    state: w.state,
    processed: rate.processed,
    inFlight: w.inFlight,
    failed: w.failed,
    writes: rate.writes,
    writesTotal: writesOf(w)
  }
}

function sum (values) {
  const numbers = values.filter((v) => typeof v === 'number')
  return numbers.length ? numbers.reduce((a, b) => a + b, 0) : null
}

module.exports = { run, frame }
