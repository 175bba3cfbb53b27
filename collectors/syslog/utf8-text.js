'use strict'

// Decoding the parts of a syslog message that are text (MSG, PARAM-VALUEs,
// raw lines) as UTF-8, keeping the bytes beside the text when they are not
// valid UTF-8, never replacing them silently.

const { isUtf8 } = require('node:buffer')

function utf8Text (buf, start, end) {
  return start === end ? '' : buf.utf8Slice(start, end)
}

// The UTF-8 text of ctx.buf[start, end); when those bytes are not UTF-8, also
// sets ctx.invalidUtf8 and leaves a copy of them in ctx.rawBytes.
function utf8TextKept (ctx, start, end) {
  const text = utf8Text(ctx.buf, start, end)
  if (text.indexOf('\uFFFD') === -1 || isUtf8(ctx.buf.subarray(start, end))) return text
  ctx.invalidUtf8 = true
  ctx.rawBytes = Buffer.from(ctx.buf.subarray(start, end))
  return text
}

module.exports = { utf8Text, utf8TextKept }
