'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')

/*
 * One segment file of the disk buffer (journal.js) as the master holds it
 * open, and the file operations on segments: a kept segment's list of the
 * records not released (`<n>.ccj.live`), its removal, whether the file
 * still has a name.
 */
// Beside a segment, the data offsets of its records not released: at a
// stop `{ offsets }`, the whole segment; while the master runs, every
// LIST_EVERY_MS when some were released since, `{ running, through }`
// (`through`: how far the segment reached then; what lies past it was not
// listed, and comes back). Under another key than a stop's: a version
// before running lists reads such a file as none, and replays all.
const LIVE_SUFFIX = '.live'
const LIST_EVERY_MS = 1000

class Segment {
  constructor (seq, file, fd, size) {
    this.seq = seq
    this.file = file
    this.fd = fd
    this.size = size
    this.live = 0 // records not yet released
    this.messages = 0
    this.offsets = new Set() // the data offsets of those records
    this.unlisted = false // released records since its list was last written (listReleased)
    this.movedTo = null // data offset → where the record was written again (Journal#restoreLost), once its file lost its name
  }
}

function syncDirectory (dir) {
  let fd = null
  try {
    fd = fs.openSync(dir, 'r')
    fs.fsyncSync(fd)
  } catch {
    // Not every file system can sync a directory; the data files still are.
  } finally {
    if (fd !== null) closeQuietly(fd)
  }
}

function closeQuietly (fd) {
  if (fd === null) return
  try { fs.closeSync(fd) } catch {}
}

// The data offsets a stop listed as not released in a segment; null when
// there is no list (a crash, a run before lists were kept): all come back.
function readLiveOffsets (file) {
  const list = readJsonFile(file + LIVE_SUFFIX)
  if (list && Array.isArray(list.offsets)) return { offsets: new Set(list.offsets), through: Infinity }
  if (list && Array.isArray(list.running) && Number.isInteger(list.through)) return { offsets: new Set(list.running), through: list.through }
  return null
}

/** Whether a record (by its data offset) was released as the segment's list says: not delivered again. */
function listedReleased (live, dataOffset) {
  return live !== null && dataOffset < live.through && !live.offsets.has(dataOffset)
}

/**
 * While the master runs: the list of each segment some of whose records
 * were released since it was last written, so that after a crash (no stop
 * to list them) what comes back is what was not released a second before,
 * not the whole segment: every message of it counted again, every cap
 * decided again. A list not written leaves the older one, naming more.
 */
function listReleased (segments, onError) {
  for (const segment of segments) {
    if (!segment.unlisted || segment.file === null) continue
    try {
      writeJsonFile(segment.file + LIVE_SUFFIX, { running: [...segment.offsets], through: segment.size })
      segment.unlisted = false
    } catch (err) {
      onError(err)
    }
  }
}

// Whether the segment's file lost its name (its directory was deleted):
// its bytes live on only while it is open here.
function isUnlinked (segment) {
  if (segment.fd === null) return false
  try {
    return fs.fstatSync(segment.fd).nlink === 0
  } catch {
    return false
  }
}

// Lists of records not released (`<n>.ccj.live`) whose segment is gone
// (left by a run whose directory was deleted under it): a later segment of
// that name must not be read through them.
function removeOrphanLists (dir, suffix) {
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith(suffix + LIVE_SUFFIX) && !fs.existsSync(path.join(dir, name.slice(0, -LIVE_SUFFIX.length)))) fs.rmSync(path.join(dir, name), { force: true })
  }
}

function removeFiles (file) {
  fs.rmSync(file + LIVE_SUFFIX, { force: true })
  fs.rmSync(file, { force: true })
}

module.exports = { Segment, LIVE_SUFFIX, LIST_EVERY_MS, syncDirectory, closeQuietly, readLiveOffsets, listedReleased, listReleased, removeFiles, removeOrphanLists, isUnlinked }
