'use strict'
// Peak resident set per process for the benchmarks: the kernel's high-water
// mark (VmHWM in /proc/<pid>/status), which catches peaks between samples,
// reset at a measurement's start (writing 5 to /proc/<pid>/clear_refs) so a
// process that outlives one scenario does not carry its peak into the next.
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')

const mib = (bytes) => Math.round(bytes / 1048576)
const round1 = (x) => Math.round(x * 10) / 10
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The kernel's high-water mark of a process's resident set in bytes (0 once it is gone). */
function peakRssOf (pid) {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return kb ? Number(kb[1]) * 1024 : 0
  } catch {
    return 0
  }
}

const TICKS_PER_SECOND = 100 // USER_HZ, 100 on Linux

// CPU seconds a process has used (user + system; 0 once it is gone).
function cpuSecondsOf (pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

function resetPeakRss (pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {} // gone, or not ours: its peak is then since its start
}

/**
 * Peaks of one collector: its master, each worker slot (the largest of the
 * processes that held it: a killed worker's replacement is the same slot)
 * and the database server.
 */
class PeakRss {
  constructor ({ master, db }) {
    this.master = 0
    this.db = 0
    this.masterPid = master
    this.dbPid = db || null
    this.slots = new Map() // slot → { pids: Set, peak }
    this.cpu = new Map() // pid → CPU seconds at the last sample
    this.cpuAtStart = new Map([[master, cpuSecondsOf(master)]])
    resetPeakRss(master)
    if (this.dbPid) resetPeakRss(this.dbPid)
  }

  sampleMaster (pid = this.masterPid) {
    this.master = Math.max(this.master, peakRssOf(pid))
    if (!this.cpuAtStart.has(pid)) this.cpuAtStart.set(pid, cpuSecondsOf(pid))
    this.cpu.set(pid, cpuSecondsOf(pid) || this.cpu.get(pid) || 0)
  }

  // CPU seconds used by `pids` since each was first seen (killed ones up to their last sample).
  cpuSince (pids) {
    return pids.reduce((sum, pid) => sum + Math.max(0, (this.cpu.get(pid) || 0) - (this.cpuAtStart.get(pid) || 0)), 0)
  }

  /** Reads every process's peak; `workers`: [{ slot, pid }] as stats() lists them. */
  sampleWorkers (workers = []) {
    for (const { slot, pid } of workers) {
      if (!this.slots.has(slot)) this.slots.set(slot, { pids: new Set(), peak: 0 })
      const entry = this.slots.get(slot)
      if (!entry.pids.has(pid)) {
        entry.pids.add(pid)
        this.cpuAtStart.set(pid, cpuSecondsOf(pid))
        resetPeakRss(pid) // a replacement forked while the scenario runs: a no-op in effect
      }
    }
    for (const entry of this.slots.values()) {
      for (const pid of entry.pids) {
        entry.peak = Math.max(entry.peak, peakRssOf(pid))
        this.cpu.set(pid, cpuSecondsOf(pid) || this.cpu.get(pid) || 0)
      }
    }
    this.sampleMaster()
    if (this.dbPid) this.db = Math.max(this.db, peakRssOf(this.dbPid))
  }

  /**
   * MiB: masterMiB, workersMiB (per slot), nodeMiB (master + workers: the
   * collector's), dbMiB; CPU seconds since the start: masterCpuS, workersCpuS (all slots).
   */
  result () {
    const slots = [...this.slots.entries()].sort((a, b) => a[0] - b[0]).map(([, e]) => e)
    const workers = slots.map((e) => e.peak)
    const masterPids = [...this.cpuAtStart.keys()].filter((pid) => !slots.some((e) => e.pids.has(pid)))
    return {
      masterMiB: mib(this.master),
      workersMiB: workers.map(mib),
      nodeMiB: mib(this.master + workers.reduce((a, b) => a + b, 0)),
      dbMiB: this.dbPid ? mib(this.db) : undefined,
      masterCpuS: round1(this.cpuSince(masterPids)),
      workersCpuS: round1(this.cpuSince(slots.flatMap((e) => [...e.pids])))
    }
  }
}

const ROOT = path.join(__dirname, '..')
// What the syslog collector's processes load: the master `collector run`'s
// entry and the collector module, a worker the worker runtime, the
// collector module (its parser) and its definition's worker (the sinks,
// mongoose and the MongoDB driver).
const load = (...files) => files.map((f) => `require(${JSON.stringify(path.join(ROOT, f))})`).join(';')
const LOADED = {
  master: load('app/collector-entry', 'collectors/syslog'),
  worker: load('lib/worker/worker-runtime', 'collectors/syslog', 'workers/definition-worker')
}

/**
 * Peak RSS of three idle Node processes, twice: bare (`setInterval` only)
 * and loading what a master and two workers must load, started together
 * and read after `settleMs`. Resolves { bareMiB, loadedMiB } (sums of three).
 */
async function idleBaselines (settleMs = 2000) {
  const bodies = {
    bare: ['', '', ''],
    loaded: [LOADED.master, LOADED.worker, LOADED.worker]
  }
  const children = {}
  for (const [kind, list] of Object.entries(bodies)) {
    children[kind] = list.map((body) => spawn(process.execPath, ['-e', `${body};setInterval(()=>{},1000)`], { stdio: 'ignore' }))
  }
  await sleep(settleMs)
  const result = {}
  for (const [kind, list] of Object.entries(children)) {
    result[`${kind}MiB`] = mib(list.reduce((sum, c) => sum + peakRssOf(c.pid), 0))
    for (const c of list) c.kill('SIGKILL')
  }
  return result
}

module.exports = { PeakRss, peakRssOf, cpuSecondsOf, idleBaselines, mib }
