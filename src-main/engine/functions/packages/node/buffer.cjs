// Node's `buffer` inside the sandbox: feross's `buffer` package, the one browser bundlers use, a
// Uint8Array subclass in plain JavaScript (base64, hex, latin1, utf8, reads and writes of numbers).
'use strict';
module.exports = require('buffer/index.js');
