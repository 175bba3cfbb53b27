'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')
const { writeRecordFile, readRecordFile } = require('./journal-record')

/*
 * The batches a collector gave up on (poison, or no worker left to take
 * them), kept so that they can be replayed once the cause is fixed: what
 * is given up is kept, never silently dropped.
 *
 * A directory (`deadLetterDir`: `<bufferDir>/dead-letter` with the disk
 * buffer, else `<state home>/collector-dead-letter/<name>`) of pairs:
 *   <time>-<reason>-<batch id>.ccj   the batch, one record in the disk
 *                                    buffer's format (journal.js owns it)
 *   <time>-<reason>-<batch id>.json  { reason, detail, at, messages,
 *                                    batchId, origin, receivedAt, target }
 * The .json is written last: a .ccj without one is listed with reason null.
 * `collector replay` moves pairs into `replay/`; the master delivers what it
 * finds there at its next start or rolling restart (takeQueued) and removes
 * each pair once it is written to the disk buffer (or, without one, handed
 * to a worker).
 */
const RECORD = '.ccj'
const INFO = '.json'
const QUEUE = 'replay'

class DeadLetters {
  /**
   * @param {{ dir: string }} options
   */
  constructor ({ dir }) {
    this.dir = path.resolve(dir)
    this.target = null
    this.files = 0 // pairs in the directory (queued ones too)
    this.messages = 0
    this.replayed = 0 // messages taken from replay/ by this run
  }

  /** Counts what the directory holds; `target`: what the workers write to now (written with each dead letter). */
  open (target = null) {
    this.target = target
    const entries = listDeadLetters(this.dir)
    this.files = entries.length
    this.messages = entries.reduce((sum, e) => sum + (e.messages || 0), 0)
  }

  /**
   * Keeps `batch` (its bytes `bytes`) with its reason; returns the entry
   * written. A batch given up as poison is kept under an origin of its own
   * (`<run id>_dl<batch id>`): the batches of its first origin after it
   * were stored past it, and the per-origin watermarks of the storing
   * workers would take it for stored already. Nothing of it was stored (a
   * worker ended while processing it, and the built-in sinks write only
   * batches processed whole); its messages keep their keys, which take only
   * the run id from the origin. Other batches keep their origin.
   * @throws when it cannot be written (nothing is left behind then)
   */
  keep (batch, bytes, reason, detail) {
    makeDir(this.dir, PRIVATE_DIR)
    const at = new Date()
    const name = `${at.toISOString().replace(/[-:.]/g, '')}-${reason}-${batch.id}`
    const origin = reason === 'poison' ? ownOrigin(batch) : batch.origin
    const file = path.join(this.dir, name + RECORD)
    writeRecordFile(file, batch, bytes, origin)
    const info = { reason, detail, at: at.toISOString(), messages: batch.count, batchId: batch.id, origin, receivedAt: new Date(batch.receivedAt).toISOString(), target: this.target }
    writeJsonFile(path.join(this.dir, name + INFO), info, 2)
    this.files++
    this.messages += batch.count
    return { name, file, queued: false, ...info }
  }

  /**
   * What `collector replay` queued, to deliver now: `{ taken: [{ entry,
   * batches }], elsewhere: [entry], unreadable: [entry] }`. Left queued, not
   * replayed: `elsewhere`, written for another destination than this run's;
   * `unreadable`, a file that no longer reads back whole.
   */
  takeQueued () {
    const result = { taken: [], elsewhere: [], unreadable: [] }
    for (const entry of listDeadLetters(this.dir).filter((e) => e.queued)) {
      if (entry.target && this.target && entry.target !== this.target) {
        result.elsewhere.push(entry)
        continue
      }
      let read = null
      try {
        read = readRecordFile(entry.file)
      } catch {}
      if (read === null || read.damaged.records > 0 || read.batches.length === 0) result.unreadable.push(entry)
      else result.taken.push({ entry, batches: read.batches })
    }
    return result
  }

  /** A dead letter delivered again (written to the disk buffer, or handed to a worker): its pair goes. */
  remove (entry) {
    fs.rmSync(entry.file, { force: true })
    fs.rmSync(entry.file.slice(0, -RECORD.length) + INFO, { force: true })
    this.files = Math.max(0, this.files - 1)
    this.messages = Math.max(0, this.messages - (entry.messages || 0))
    this.replayed += entry.messages || 0
  }

  /** For stats(): `{ dir, files, messages, replayed }`. */
  stats () {
    return { dir: this.dir, files: this.files, messages: this.messages, replayed: this.replayed }
  }
}

// `<run id>_dl<batch id>`: see DeadLetters#keep.
function ownOrigin (batch) {
  return `${batch.origin.slice(0, batch.origin.indexOf('_'))}_dl${batch.id}`
}

function recordNames (dir) {
  try {
    return fs.readdirSync(dir).filter((name) => name.endsWith(RECORD)).sort()
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}

/**
 * Every dead letter of `dir`, oldest first, queued ones (in `replay/`) too:
 * `{ name, file, queued, reason, detail, at, messages, batchId, origin, receivedAt, target }`
 * (null fields for a record whose .json is missing or unreadable). For the
 * master and the CLI (`collector status`, `collector replay`).
 */
function listDeadLetters (dir) {
  const entries = []
  for (const queued of [false, true]) {
    const where = queued ? path.join(dir, QUEUE) : dir
    for (const record of recordNames(where)) {
      const name = record.slice(0, -RECORD.length)
      const info = readJsonFile(path.join(where, name + INFO)) || {}
      entries.push({ reason: null, detail: null, at: null, messages: null, target: null, ...info, name, file: path.join(where, record), queued })
    }
  }
  return entries
}

/**
 * `collector replay`: moves the dead letters of `dir` named in `names`
 * (all when none is named) into `replay/`, for the collector's next start
 * or rolling restart. Returns the entries moved; throws naming one that
 * does not exist.
 */
function queueForReplay (dir, names = []) {
  const held = listDeadLetters(dir).filter((e) => !e.queued)
  const named = (wanted) => {
    const entry = held.find((e) => e.name === wanted || path.basename(e.file) === wanted)
    if (!entry) throw Object.assign(new Error(`no dead letter ${JSON.stringify(wanted)} in ${dir}`), { code: 'ENOENT' })
    return entry
  }
  const chosen = names.length === 0 ? held : names.map(named)
  if (chosen.length === 0) return []
  const queue = path.join(dir, QUEUE)
  makeDir(queue, PRIVATE_DIR)
  for (const entry of chosen) {
    // The .json first: a .ccj is listed (as queued or not) wherever it lies.
    const info = entry.file.slice(0, -RECORD.length) + INFO
    if (fs.existsSync(info)) fs.renameSync(info, path.join(queue, entry.name + INFO))
    fs.renameSync(entry.file, path.join(queue, entry.name + RECORD))
  }
  return chosen.map((e) => ({ ...e, queued: true, file: path.join(queue, e.name + RECORD) }))
}

module.exports = { DeadLetters, listDeadLetters, queueForReplay }
