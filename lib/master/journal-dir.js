'use strict'

const fs = require('node:fs')
const path = require('node:path')
const BufferError = require('../../exceptions/buffer-error')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')
const { takeClaim, releaseClaim, claimedBy } = require('../shared/pid-claim')

/*
 * Who holds a disk buffer's directory (lib/master/journal.js), and for
 * which destination its records were written: one live process at a time
 * (`lock`, its pid), and replayed only into the destination recorded in
 * `destination.json`.
 */
const LOCK_FILE = 'lock'
// { destination }: what the workers wrote to when the buffer was written.
const DESTINATION_FILE = 'destination.json'

/**
 * Takes the directory for this process; a lock left by a process that is
 * gone is taken over. Returns true.
 * @throws {BufferError} held by another live process, or not writable
 */
function takeLock (dir) {
  let holder
  try {
    holder = takeClaim(path.join(dir, LOCK_FILE))
  } catch (err) {
    throw new BufferError(dir, err.code === 'EAGAIN' ? 'could not take the lock file' : `cannot write in the directory (${err.code || err.message})`, err)
  }
  if (holder !== null) throw new BufferError(dir, `in use by process ${holder}: each collector needs a buffer directory of its own (--buffer-dir)`)
  return true
}

/** The pid the directory's lock names, or null (no lock). */
function lockHolder (dir) {
  return claimedBy(path.join(dir, LOCK_FILE))
}

function releaseLock (dir) {
  releaseClaim(path.join(dir, LOCK_FILE))
}

/**
 * A buffer is replayed only into the destination it was written for (a
 * later run of the same name may write to another database). When the
 * directory records another one, everything in it but the lock (segments,
 * dead letters) moves to a directory beside it named after that
 * destination, where a run writing there can replay it (its bufferDir);
 * then this destination is recorded. Without a destination (a balancer
 * whose workers do not say), nothing is checked or recorded.
 * @returns {{ dir: string, destination: string }|null} where what was there went
 */
function setAsideForOther (dir, destination) {
  if (destination === null) return null
  const file = path.join(dir, DESTINATION_FILE)
  const recorded = readJsonFile(file)
  const before = recorded && typeof recorded.destination === 'string' ? recorded.destination : null
  let moved = null
  if (before !== null && before !== destination) {
    const names = fs.readdirSync(dir).filter((name) => name !== LOCK_FILE)
    if (names.some((name) => name !== DESTINATION_FILE)) {
      const stamp = new Date().toISOString().replace(/[-:]|\.\d+/g, '')
      moved = { dir: `${dir}.for-${before.replace(/[^A-Za-z0-9.-]+/g, '_').slice(0, 120)}-${stamp}`, destination: before }
      try {
        makeDir(moved.dir, PRIVATE_DIR)
        for (const name of names) fs.renameSync(path.join(dir, name), path.join(moved.dir, name))
      } catch (err) {
        throw new BufferError(dir, `it was written for ${before}, not ${destination}, and could not be set aside in ${moved.dir} (${err.code || err.message})`, err)
      }
    }
  }
  if (before !== destination) writeJsonFile(file, { destination })
  return moved
}

// The bytes free to this process on the directory's file system (Infinity
// when it cannot tell).
function freeBytes (dir) {
  try {
    const { bavail, bsize } = fs.statfsSync(dir)
    return bavail * bsize
  } catch {
    return Infinity
  }
}

module.exports = { takeLock, lockHolder, releaseLock, setAsideForOther, freeBytes }
