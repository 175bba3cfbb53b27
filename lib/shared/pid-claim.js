'use strict'

const fs = require('node:fs')
const { PRIVATE_FILE } = require('./make-dir')
const { isAlive } = require('./is-alive')

/*
 * A file saying which live process holds something (a disk buffer's
 * directory, a collector's name): `<pid> <start>`, start the process's
 * start time (clock ticks since boot, /proc/<pid>/stat) where /proc has it,
 * so that a pid a reboot or a crash left behind, since reused by another
 * process, is not taken for the holder: a collector PM2 resurrects at boot
 * would otherwise be refused its own name or buffer.
 */

/** The start time of a process, as /proc says it, or null (no /proc, no such process). */
function processStart (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After "pid (comm) ", field 3 on; the start time is field 22.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || null
  } catch {
    return null
  }
}

/** The pid the claim names, whether alive or not, or null (none). */
function claimedBy (file) {
  try {
    return Number.parseInt(fs.readFileSync(file, 'utf8'), 10) || null
  } catch {
    return null
  }
}

/** The live process holding the claim, or null: none, or one that is gone (its pid reused or not). */
function liveHolder (file) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch {
    return null
  }
  const [pidText, start] = text.trim().split(' ')
  const pid = Number.parseInt(pidText, 10)
  if (!pid || !isAlive(pid)) return null
  const now = start ? processStart(pid) : null
  return now !== null && now !== start ? null : pid
}

/**
 * Claims the file for this process; a claim of a process that is gone is
 * taken over, as is one of this process. Returns null, or the pid of the
 * live process that holds it.
 * @throws {Error} the file cannot be written (its code: EACCES, ENOENT, …)
 */
function takeClaim (file) {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid} ${processStart(process.pid) || ''}\n`, { flag: 'wx', mode: PRIVATE_FILE })
      return null
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
    }
    const holder = liveHolder(file)
    if (holder !== null && holder !== process.pid) return holder
    fs.rmSync(file, { force: true })
  }
  throw Object.assign(new Error(`could not take ${file}`), { code: 'EAGAIN' })
}

/** Removes the claim if this process holds it. */
function releaseClaim (file) {
  if (claimedBy(file) === process.pid) fs.rmSync(file, { force: true })
}

module.exports = { takeClaim, releaseClaim, claimedBy }
