'use strict'

const fs = require('node:fs')
const path = require('node:path')
const BufferError = require('../../exceptions/buffer-error')
const { makeDir, PRIVATE_DIR, PRIVATE_FILE } = require('../shared/make-dir')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')
const { isAlive } = require('../shared/is-alive')

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
  const file = path.join(dir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: PRIVATE_FILE })
      return true
    } catch (err) {
      if (err.code !== 'EEXIST') throw new BufferError(dir, `cannot write in the directory (${err.code || err.message})`, err)
    }
    const holder = Number.parseInt(readText(file), 10)
    if (holder && holder !== process.pid && isAlive(holder)) {
      throw new BufferError(dir, `in use by process ${holder}: each collector needs a buffer directory of its own (--buffer-dir)`)
    }
    fs.rmSync(file, { force: true }) // left by a process that is gone
  }
  throw new BufferError(dir, 'could not take the lock file')
}

/** The pid the directory's lock names, or null (no lock). */
function lockHolder (dir) {
  return Number.parseInt(readText(path.join(dir, LOCK_FILE)), 10) || null
}

function releaseLock (dir) {
  fs.rmSync(path.join(dir, LOCK_FILE), { force: true })
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

function readText (file) {
  try { return fs.readFileSync(file, 'utf8') } catch { return '' }
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
