'use strict'

// The key of a stream side's per-minute bucket (`quality.minutes.<key>`),
// written by the RTCP workers and read by `collector calls`: one format.

/** YYYYMMDDHHmm (UTC) of `at`. */
function minuteKey (at) {
  return new Date(at).toISOString().slice(0, 16).replace(/[-T:]/g, '')
}

// The minute key of the last report, kept: every report of a minute shares it.
let keyMinute = -1
let lastKey = ''

/** minuteKey(at), made once a minute. */
function minuteKeyOf (at) {
  const minute = Math.floor(at / 60000)
  if (minute !== keyMinute) {
    lastKey = minuteKey(at)
    keyMinute = minute
  }
  return lastKey
}

module.exports = { minuteKey, minuteKeyOf }
