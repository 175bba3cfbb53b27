'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { isAlive } = require('./is-alive')

/*
 * The poison evidence of a worker (lib/master/batch-fate.js): how many of
 * the master's batches it has been through (doWork done for each of their
 * messages). The master reads it only once the worker has ended, to tell
 * the batch it died processing from those it had finished.
 *
 * It crossed IPC after every batch (ipc.FINISHED, still the fallback), one
 * message that woke the master: 8-12 % of a syslog worker's CPU at 10,000
 * lines/s (benchmarks/syslog-vs-syslog-ng.js). Now each worker has a file
 * of its own, made by the master before the fork, and overwrites its count
 * there after every batch: 8 bytes (a double, little-endian) at offset 0,
 * one pwrite into the page cache, before the next batch begins, so a
 * worker that dies in the next batch has said it. A master that is killed
 * leaves its directory behind; the next master on the machine removes the
 * directories of masters that are gone.
 */

const PREFIX = 'collector-progress-'
const COUNT_BYTES = 8

/** The master's side: one directory per master, one file per worker forked. */
class ProgressFiles {
  constructor (parent = os.tmpdir()) {
    this.parent = parent
    this.dir = null
    this.made = 0
  }

  /** A new file (count 0) for a worker about to be forked; null when it cannot be made (the worker then says it over IPC). */
  create () {
    try {
      if (this.dir === null) {
        removeLeftBehind(this.parent)
        this.dir = fs.mkdtempSync(path.join(this.parent, `${PREFIX}${process.pid}-`))
      }
      const file = path.join(this.dir, String(++this.made))
      fs.writeFileSync(file, Buffer.alloc(COUNT_BYTES))
      return file
    } catch {
      return null
    }
  }

  /** The count an ended worker left in `file` (0: none), and the file removed. */
  take (file) {
    if (file === null) return 0
    let count = 0
    try {
      const bytes = fs.readFileSync(file)
      if (bytes.length >= COUNT_BYTES) count = bytes.readDoubleLE(0)
    } catch {} // never made, or removed: no evidence from it
    fs.rmSync(file, { force: true })
    return count
  }

  close () {
    if (this.dir !== null) fs.rmSync(this.dir, { recursive: true, force: true })
    this.dir = null
  }
}

// The directories of masters no longer running (killed before close()).
function removeLeftBehind (parent) {
  for (const name of fs.readdirSync(parent)) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split('-')[0]) : 0
    if (pid > 0 && pid !== process.pid && !isAlive(pid)) fs.rmSync(path.join(parent, name), { recursive: true, force: true })
  }
}

/** The worker's side: writes its count into the file the master made for it. */
class ProgressWriter {
  constructor (file) {
    this.fd = null
    this.bytes = Buffer.alloc(COUNT_BYTES)
    if (file) try { this.fd = fs.openSync(file, 'r+') } catch {}
  }

  /** Writes `count`; false when there is no file to write it to (say it over IPC instead). */
  write (count) {
    if (this.fd === null) return false
    this.bytes.writeDoubleLE(count, 0)
    try {
      fs.writeSync(this.fd, this.bytes, 0, COUNT_BYTES, 0)
      return true
    } catch {
      this.fd = null // the master takes the larger of the file's count and what IPC said
      return false
    }
  }
}

module.exports = { ProgressFiles, ProgressWriter }
