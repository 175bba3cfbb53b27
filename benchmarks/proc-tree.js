'use strict'
// CPU and memory of a process and everything it forked, from Linux /proc:
// what the side-by-side benchmarks (syslog-vs-syslog-ng.js,
// hep-vs-sipcapture.js) charge to a side.
const fs = require('node:fs')

const TICKS = 100 // USER_HZ: /proc's clock ticks per second on Linux

/** `{ ppid, cpu }` (utime + stime, seconds) of a process, or null when it is gone. */
function procStat (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICKS }
  } catch {
    return null
  }
}

function statusKb (pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) : 0
  } catch {
    return 0
  }
}

/** `root` and every process descended from it. */
function treeOf (root) {
  const parents = new Map()
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const s = procStat(name)
    if (s) parents.set(Number(name), s.ppid)
  }
  const tree = [root]
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid)
  return tree
}

// Per pid: CPU seconds at the start and last seen, and the peak RSS seen
// (kB). A process born after the start counts from 0; one that ended
// between samples keeps what it was last seen to have used.
class TreeSampler {
  constructor (root) {
    this.root = root
    this.pids = new Map()
    this.sample(true)
  }

  sample (start = false) {
    for (const pid of treeOf(this.root)) {
      const s = procStat(pid)
      if (!s) continue
      if (!this.pids.has(pid)) {
        if (start) try { fs.writeFileSync(`/proc/${pid}/clear_refs`, '5') } catch {}
        this.pids.set(pid, { cpu0: start ? s.cpu : 0, cpu: s.cpu, peak: 0 })
      }
      const p = this.pids.get(pid)
      p.cpu = s.cpu
      p.peak = Math.max(p.peak, statusKb(pid, 'VmHWM'))
    }
  }

  /** CPU seconds the tree used since the start, less the processes in `except` (pids). */
  cpu (except = []) {
    let sum = 0
    for (const [pid, p] of this.pids) if (!except.includes(pid)) sum += p.cpu - p.cpu0
    return sum
  }

  peakMiB () { return Math.round([...this.pids.values()].reduce((sum, p) => sum + p.peak, 0) / 1024) }
  peaksMiB () { return [...this.pids.values()].map((p) => Math.round(p.peak / 1024)) }

  /** CPU seconds of each process since the start, in the order first seen (the root first). */
  cpus () { return [...this.pids.values()].map((p) => p.cpu - p.cpu0) }
}

function rssMiB (root) {
  return Math.round(treeOf(root).reduce((sum, pid) => sum + statusKb(pid, 'VmRSS'), 0) / 1024)
}

module.exports = { procStat, treeOf, TreeSampler, rssMiB }
