'use strict'

const fs = require('node:fs')
const { PRIVATE_FILE } = require('./make-dir')

/*
 * Small JSON files kept beside collected data (the disk buffer's
 * destination, a dead letter's description): read whole or not at all,
 * written owner-only through a new file renamed over the old one, so that
 * a reader never sees half of one.
 */

/** The value in `file`, or null when it is missing or not JSON. */
function readJsonFile (file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

/** Writes `value` as JSON (indented by `space`) to `file`, replacing it whole. */
function writeJsonFile (file, value, space = 0) {
  const tmp = `${file}.${process.pid}.tmp`
  try {
    fs.writeFileSync(tmp, JSON.stringify(value, null, space) + '\n', { mode: PRIVATE_FILE })
    fs.renameSync(tmp, file)
  } catch (err) {
    fs.rmSync(tmp, { force: true }) // a full disk leaves no half file behind, written again each time
    throw err
  }
}

module.exports = { readJsonFile, writeJsonFile }
