import { constants, createCipheriv, createHash, createHmac, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, pbkdf2Sync, privateDecrypt, randomBytes, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { FunctionSpecInput } from '../../src-main/engine/index.ts';
import { SUBTLE_LIMITS, SubtleKeys } from '../../src-main/sandboxHost/subtle.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

// crypto.subtle inside the sandbox, backed by the sandbox host's WebCrypto: known answers from the
// RFCs and FIPS examples, signatures checked by node:crypto on this side, and every bound crossed.
const engine = testEngine();

/** Guest helpers every function below gets. */
const GUEST_HELPERS = `
  const subtle = crypto.subtle;
  const utf8 = (s) => new TextEncoder().encode(s);
  const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
  const fromHex = (h) => new Uint8Array(h.match(/../g).map((b) => parseInt(b, 16)));
  const caught = async (promise) => { try { await promise; return 'resolved'; } catch (e) { return { name: e.name, message: e.message, dom: e instanceof DOMException }; } };
`;

/** Runs `body` (the body of an async function, with GUEST_HELPERS) in the sandbox; its value. */
async function inSandbox<T = Record<string, unknown>>(name: string, body: string, spec: Partial<FunctionSpecInput> = {}): Promise<T> {
  await defineFunction(engine, { name, ...spec }, `export default async (args) => { ${GUEST_HELPERS}\n${body}\n}`);
  const result = await engine.run(name, {}, { caller: 'test' });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { value: T }).value;
}

const hex = (bytes: Uint8Array | Buffer): string => Buffer.from(bytes).toString('hex');
const b64url = (bytes: Buffer): string => bytes.toString('base64url');

describe('digest, HMAC and key derivation: known answers', () => {
  it('digests "abc" as FIPS 180-2 gives for SHA-1, SHA-256, SHA-384 and SHA-512', async () => {
    const value = await inSandbox<Record<string, string>>(
      'digest_abc',
      `const out = {};
       for (const name of ['SHA-1', 'SHA-256', 'SHA-384', { name: 'SHA-512' }]) out[name.name ?? name] = hex(await subtle.digest(name, utf8('abc')));
       out.view = hex(await subtle.digest('sha-256', new DataView(utf8('xabcx').buffer, 1, 3)));
       return out;`,
    );
    expect(value).toEqual({
      'SHA-1': 'a9993e364706816aba3e25717850c26c9cd0d89d',
      'SHA-256': 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      'SHA-384': 'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
      'SHA-512': 'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
      view: createHash('sha256').update('abc').digest('hex'),
    });
    for (const [name, digest] of Object.entries(value).slice(0, 4)) expect(digest).toBe(createHash(name.replace('-', '').toLowerCase()).update('abc').digest('hex'));
  });

  it('signs and verifies HMAC as RFC 4231 test case 2 gives', async () => {
    const value = await inSandbox(
      'hmac_rfc4231',
      `const key256 = await subtle.importKey('raw', utf8('Jefe'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
       const key512 = await subtle.importKey('raw', utf8('Jefe'), { name: 'HMAC', hash: { name: 'SHA-512' } }, false, ['sign']);
       const data = utf8('what do ya want for nothing?');
       const mac = await subtle.sign('HMAC', key256, data);
       return {
         sha256: hex(mac), sha512: hex(await subtle.sign({ name: 'HMAC' }, key512, data)),
         verifies: await subtle.verify('HMAC', key256, mac, data),
         tampered: await subtle.verify('HMAC', key256, mac, utf8('what do ya want for nothing!')),
         key: { type: key256.type, extractable: key256.extractable, algorithm: key256.algorithm, usages: key256.usages, tag: Object.prototype.toString.call(key256), isKey: key256 instanceof CryptoKey },
         wrongUsage: await caught(subtle.sign('HMAC', key512, data).then(() => subtle.verify('HMAC', key512, mac, data))),
       };`,
    );
    expect(value.sha256).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    expect(value.sha512).toBe('164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737');
    expect(value.sha256).toBe(createHmac('sha256', 'Jefe').update('what do ya want for nothing?').digest('hex'));
    expect(value.verifies).toBe(true);
    expect(value.tampered).toBe(false);
    expect(value.key).toEqual({ type: 'secret', extractable: false, algorithm: { name: 'HMAC', length: 32, hash: { name: 'SHA-256' } }, usages: ['sign', 'verify'], tag: '[object CryptoKey]', isKey: true });
    expect(value.wrongUsage).toMatchObject({ name: 'InvalidAccessError', dom: true });
  });

  it('derives PBKDF2 bits as RFC 6070 gives, and HKDF bits as RFC 5869 test case 1 gives', async () => {
    const value = await inSandbox(
      'derive_rfc',
      `const password = await subtle.importKey('raw', utf8('password'), 'PBKDF2', false, ['deriveBits']);
       const pbkdf2 = [];
       for (const iterations of [1, 2, 4096]) pbkdf2.push(hex(await subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt: utf8('salt'), iterations }, password, 160)));
       const ikm = await subtle.importKey('raw', new Uint8Array(22).fill(0x0b), 'HKDF', false, ['deriveBits', 'deriveKey']);
       const hkdf = { name: 'HKDF', hash: 'SHA-256', salt: fromHex('000102030405060708090a0b0c'), info: fromHex('f0f1f2f3f4f5f6f7f8f9') };
       const okm = hex(await subtle.deriveBits(hkdf, ikm, 42 * 8));
       const derived = await subtle.deriveKey(hkdf, ikm, { name: 'AES-GCM', length: 256 }, true, ['encrypt']);
       return { pbkdf2, okm, derived: hex(await subtle.exportKey('raw', derived)), derivedAlgorithm: derived.algorithm };`,
    );
    expect(value.pbkdf2).toEqual(['0c60c80f961f0e71f3a9b524af6012062fe037a6', 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957', '4b007901b765489abead49d926f721d065a429c1']);
    expect((value.pbkdf2 as string[])[2]).toBe(hex(pbkdf2Sync('password', 'salt', 4096, 20, 'sha1')));
    expect(value.okm).toBe('3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865');
    const salt = Buffer.from('000102030405060708090a0b0c', 'hex');
    const info = Buffer.from('f0f1f2f3f4f5f6f7f8f9', 'hex');
    expect(value.derived).toBe(hex(Buffer.from(hkdfSync('sha256', Buffer.alloc(22, 0x0b), salt, info, 32))));
    expect(value.derivedAlgorithm).toEqual({ name: 'AES-GCM', length: 256 });
  });

  it("derives AWS's documented SigV4 signing key and signature for IAM ListUsers (2015-08-30, us-east-1)", async () => {
    const secret = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
    const value = await inSandbox(
      'sigv4',
      `const hmac = async (key, text) => subtle.sign('HMAC', await subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']), utf8(text));
       const kDate = await hmac(utf8('AWS4' + ${JSON.stringify(secret)}), '20150830');
       const kSigning = await hmac(await hmac(await hmac(kDate, 'us-east-1'), 'iam'), 'aws4_request');
       const canonical = ['GET', '/', 'Action=ListUsers&Version=2010-05-08', 'content-type:application/x-www-form-urlencoded; charset=utf-8', 'host:iam.amazonaws.com',
         'x-amz-date:20150830T123600Z', '', 'content-type;host;x-amz-date', hex(await subtle.digest('SHA-256', new Uint8Array(0)))].join('\\n');
       const toSign = ['AWS4-HMAC-SHA256', '20150830T123600Z', '20150830/us-east-1/iam/aws4_request', hex(await subtle.digest('SHA-256', utf8(canonical)))].join('\\n');
       return { signingKey: hex(kSigning), signature: hex(await hmac(kSigning, toSign)) };`,
    );
    // AWS's published values, also computed here with node:crypto.
    expect(value).toEqual({ signingKey: 'c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9', signature: '5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7' });
    const h = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();
    const kSigning = h(h(h(h(`AWS4${secret}`, '20150830'), 'us-east-1'), 'iam'), 'aws4_request');
    expect(hex(kSigning)).toBe(value.signingKey);
    const canonicalHash = createHash('sha256')
      .update(['GET', '/', 'Action=ListUsers&Version=2010-05-08', 'content-type:application/x-www-form-urlencoded; charset=utf-8', 'host:iam.amazonaws.com', 'x-amz-date:20150830T123600Z', '', 'content-type;host;x-amz-date', createHash('sha256').update('').digest('hex')].join('\n'))
      .digest('hex');
    expect(canonicalHash).toBe('f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59');
    expect(hex(h(kSigning, ['AWS4-HMAC-SHA256', '20150830T123600Z', '20150830/us-east-1/iam/aws4_request', canonicalHash].join('\n')))).toBe(value.signature);
  });
});

describe('AES', () => {
  it('encrypts as node:crypto does, decrypts its own ciphertext, and rejects a tampered one with OperationError', async () => {
    const key = Buffer.alloc(32, 7);
    const iv = Buffer.alloc(12, 9);
    const value = await inSandbox(
      'aes_gcm',
      `const key = await subtle.importKey('raw', fromHex('${hex(key)}'), 'AES-GCM', false, ['encrypt', 'decrypt']);
       const params = { name: 'AES-GCM', iv: fromHex('${hex(iv)}'), additionalData: utf8('header') };
       const sealed = new Uint8Array(await subtle.encrypt(params, key, utf8('attack at dawn')));
       const opened = new TextDecoder().decode(await subtle.decrypt(params, key, sealed));
       const tampered = sealed.slice(); tampered[0] ^= 1;
       const fresh = await subtle.generateKey({ name: 'AES-GCM', length: 128 }, true, ['encrypt', 'decrypt']);
       const iv2 = crypto.getRandomValues(new Uint8Array(12));
       const roundTrip = new TextDecoder().decode(await subtle.decrypt({ name: 'AES-GCM', iv: iv2 }, fresh, await subtle.encrypt({ name: 'AES-GCM', iv: iv2 }, fresh, utf8('hello'))));
       return {
         sealed: hex(sealed), opened, roundTrip, freshLength: (await subtle.exportKey('raw', fresh)).byteLength,
         tampered: await caught(subtle.decrypt(params, key, tampered)),
         otherAad: await caught(subtle.decrypt({ ...params, additionalData: utf8('other') }, key, sealed)),
       };`,
    );
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from('header'));
    expect(value.sealed).toBe(hex(Buffer.concat([cipher.update('attack at dawn'), cipher.final(), cipher.getAuthTag()])));
    expect(value).toMatchObject({ opened: 'attack at dawn', roundTrip: 'hello', freshLength: 16 });
    expect(value.tampered).toMatchObject({ name: 'OperationError', dom: true });
    expect(value.otherAad).toMatchObject({ name: 'OperationError', dom: true });
  });
  it('decrypts AES-CBC and AES-CTR that node:crypto encrypted, and wraps a key with AES-KW as RFC 3394 4.1 gives', async () => {
    const key = Buffer.alloc(16, 3);
    const iv = Buffer.alloc(16, 5);
    const encrypt = (algorithm: string): string => {
      const cipher = createCipheriv(algorithm, key, iv);
      return hex(Buffer.concat([cipher.update('the quick brown fox'), cipher.final()]));
    };
    const value = await inSandbox(
      'aes_modes',
      `const raw = fromHex('${hex(key)}');
       const cbc = await subtle.importKey('raw', raw, 'AES-CBC', false, ['decrypt']);
       const ctr = await subtle.importKey('raw', raw, 'AES-CTR', false, ['decrypt']);
       const text = (buf) => new TextDecoder().decode(buf);
       const kek = await subtle.importKey('raw', fromHex('000102030405060708090a0b0c0d0e0f'), 'AES-KW', false, ['wrapKey', 'unwrapKey']);
       const keyData = await subtle.importKey('raw', fromHex('00112233445566778899aabbccddeeff'), 'AES-GCM', true, ['encrypt']);
       const wrapped = await subtle.wrapKey('raw', keyData, kek, 'AES-KW');
       const unwrapped = await subtle.unwrapKey('raw', wrapped, kek, 'AES-KW', 'AES-GCM', true, ['encrypt']);
       return {
         cbc: text(await subtle.decrypt({ name: 'AES-CBC', iv: fromHex('${hex(iv)}') }, cbc, fromHex('${encrypt('aes-128-cbc')}'))),
         ctr: text(await subtle.decrypt({ name: 'AES-CTR', counter: fromHex('${hex(iv)}'), length: 64 }, ctr, fromHex('${encrypt('aes-128-ctr')}'))),
         wrapped: hex(wrapped), unwrapped: hex(await subtle.exportKey('raw', unwrapped)),
       };`,
    );
    expect(value).toEqual({ cbc: 'the quick brown fox', ctr: 'the quick brown fox', wrapped: '1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5', unwrapped: '00112233445566778899aabbccddeeff' });
  });
});

describe('key agreement and RSA-OAEP', () => {
  it('derives the same X25519, X448 and ECDH P-256 secrets as node:crypto does on the other side', async () => {
    for (const [name, nodeType, params] of [
      ['X25519', 'x25519', `'X25519'`],
      ['X448', 'x448', `'X448'`],
      ['ECDH', 'ec', `{ name: 'ECDH', namedCurve: 'P-256' }`],
    ] as const) {
      const host = generateKeyPairSync(nodeType as 'x25519', nodeType === 'ec' ? ({ namedCurve: 'P-256' } as object) : {});
      const hostSpki = host.publicKey.export({ format: 'der', type: 'spki' });
      const value = await inSandbox<{ spki: string; secret: string; bits: number }>(
        `agree_${nodeType}`,
        `const pair = await subtle.generateKey(${params}, true, ['deriveBits']);
         const other = await subtle.importKey('spki', fromHex('${hex(hostSpki)}'), ${params}, false, []);
         const secret = await subtle.deriveBits({ name: '${name}', public: other }, pair.privateKey, ${name === 'X448' ? 448 : 256});
         return { spki: hex(await subtle.exportKey('spki', pair.publicKey)), secret: hex(secret), bits: secret.byteLength * 8 };`,
      );
      const theirs = createPublicKey({ key: Buffer.from(value.spki, 'hex'), format: 'der', type: 'spki' });
      expect(value.secret).toBe(hex(diffieHellman({ privateKey: host.privateKey, publicKey: theirs })));
      expect(value.bits).toBe(name === 'X448' ? 448 : 256);
    }
  });

  it('encrypts with RSA-OAEP so that node:crypto decrypts it', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const value = await inSandbox<string>(
      'rsa_oaep',
      `const key = await subtle.importKey('spki', fromHex('${hex(publicKey.export({ format: 'der', type: 'spki' }))}'), { name: 'RSA-OAEP', hash: 'SHA-256' }, false, ['encrypt']);
       return hex(await subtle.encrypt({ name: 'RSA-OAEP', label: utf8('tag') }, key, utf8('secret message')));`,
    );
    const plain = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256', oaepLabel: Buffer.from('tag') }, Buffer.from(value, 'hex'));
    expect(plain.toString()).toBe('secret message');
  });
});

describe('signatures', () => {
  it('signs with Ed25519 as RFC 8032 test 1 gives (key imported as JWK and as pkcs8, verified with the raw public key)', async () => {
    const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
    const pub = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
    const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
    const value = await inSandbox(
      'ed25519',
      `const jwkKey = await subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', d: '${b64url(seed)}', x: '${b64url(pub)}' }, 'Ed25519', true, ['sign']);
       const pkcs8Key = await subtle.importKey('pkcs8', fromHex('${hex(pkcs8)}'), { name: 'Ed25519' }, false, ['sign']);
       const publicKey = await subtle.importKey('raw', fromHex('${hex(pub)}'), 'Ed25519', true, ['verify']);
       const signature = await subtle.sign('Ed25519', jwkKey, new Uint8Array(0));
       return {
         signature: hex(signature), again: hex(await subtle.sign('Ed25519', pkcs8Key, new Uint8Array(0))),
         verifies: await subtle.verify('Ed25519', publicKey, signature, new Uint8Array(0)),
         other: await subtle.verify('Ed25519', publicKey, signature, utf8('x')),
         pkcs8: hex(await subtle.exportKey('pkcs8', jwkKey)), spki: hex(await subtle.exportKey('spki', publicKey)),
         jwk: await subtle.exportKey('jwk', jwkKey), type: publicKey.type,
       };`,
    );
    const rfc = 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';
    expect(value).toMatchObject({ signature: rfc, again: rfc, verifies: true, other: false, pkcs8: hex(pkcs8), type: 'public' });
    expect(value.spki).toBe(hex(createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })).export({ format: 'der', type: 'spki' })));
    expect(value.jwk).toEqual({ kty: 'OKP', crv: 'Ed25519', alg: 'Ed25519', d: b64url(seed), x: b64url(pub), key_ops: ['sign'], ext: true });
  });

  it('makes Ed448 keys whose signatures node:crypto verifies', async () => {
    const value = await inSandbox<{ spki: string; signature: string }>(
      'ed448',
      `const { publicKey, privateKey } = await subtle.generateKey('Ed448', true, ['sign', 'verify']);
       return { spki: hex(await subtle.exportKey('spki', publicKey)), signature: hex(await subtle.sign('Ed448', privateKey, utf8('message'))) };`,
    );
    const key = createPublicKey({ key: Buffer.from(value.spki, 'hex'), format: 'der', type: 'spki' });
    expect(key.asymmetricKeyType).toBe('ed448');
    expect(nodeVerify(null, Buffer.from('message'), key, Buffer.from(value.signature, 'hex'))).toBe(true);
    expect(nodeVerify(null, Buffer.from('massage'), key, Buffer.from(value.signature, 'hex'))).toBe(false);
  });

  it('makes ECDSA P-256 keys whose signatures node:crypto verifies, and round-trips them through JWK, pkcs8 and spki', async () => {
    const value = await inSandbox<Record<string, string | Record<string, unknown>>>(
      'ecdsa',
      `const { publicKey, privateKey } = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
       const signature = await subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, utf8('message'));
       const jwk = await subtle.exportKey('jwk', privateKey);
       const back = await subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
       const pkcs8 = await subtle.exportKey('pkcs8', back);
       const again = await subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
       const spki = await subtle.exportKey('spki', publicKey);
       const publicAgain = await subtle.importKey('spki', spki, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
       return {
         spki: hex(spki), signature: hex(signature), pkcs8: hex(pkcs8), pkcs8Again: hex(await subtle.exportKey('pkcs8', again)), jwk,
         jwkAgain: await subtle.exportKey('jwk', again), verifiesAgain: String(await subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, publicAgain, signature, utf8('message'))),
         algorithm: privateKey.algorithm, usages: { public: publicKey.usages, private: privateKey.usages },
       };`,
    );
    const spki = createPublicKey({ key: Buffer.from(value.spki as string, 'hex'), format: 'der', type: 'spki' });
    expect(nodeVerify('sha256', Buffer.from('message'), { key: spki, dsaEncoding: 'ieee-p1363' }, Buffer.from(value.signature as string, 'hex'))).toBe(true);
    expect(nodeVerify('sha256', Buffer.from('massage'), { key: spki, dsaEncoding: 'ieee-p1363' }, Buffer.from(value.signature as string, 'hex'))).toBe(false);
    const priv = createPrivateKey({ key: Buffer.from(value.pkcs8 as string, 'hex'), format: 'der', type: 'pkcs8' });
    expect(priv.export({ format: 'jwk' })).toMatchObject({ kty: 'EC', crv: 'P-256', d: (value.jwk as { d: string }).d });
    expect(value.pkcs8Again).toBe(value.pkcs8);
    expect(value.jwkAgain).toEqual(value.jwk);
    expect(value.verifiesAgain).toBe('true');
    expect(value.algorithm).toEqual({ name: 'ECDSA', namedCurve: 'P-256' });
    expect(value.usages).toEqual({ public: ['verify'], private: ['sign'] });
  });

  it('signs RSASSA-PKCS1-v1_5 exactly as node:crypto does and RSA-PSS so that node:crypto verifies it', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
    const value = await inSandbox<Record<string, unknown>>(
      'rsa',
      `const pkcs1 = await subtle.importKey('pkcs8', fromHex('${hex(pkcs8)}'), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
       const pss = await subtle.importKey('pkcs8', fromHex('${hex(pkcs8)}'), { name: 'RSA-PSS', hash: 'SHA-256' }, false, ['sign']);
       const pair = await subtle.generateKey({ name: 'RSA-PSS', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-384' }, true, ['sign', 'verify']);
       return {
         pkcs1: hex(await subtle.sign('RSASSA-PKCS1-v1_5', pkcs1, utf8('message'))),
         pss: hex(await subtle.sign({ name: 'RSA-PSS', saltLength: 32 }, pss, utf8('message'))),
         generatedSpki: hex(await subtle.exportKey('spki', pair.publicKey)),
         generatedPss: hex(await subtle.sign({ name: 'RSA-PSS', saltLength: 48 }, pair.privateKey, utf8('message'))),
         algorithm: { ...pair.privateKey.algorithm, publicExponent: [...pair.privateKey.algorithm.publicExponent] },
         unextractable: await caught(subtle.exportKey('pkcs8', pkcs1)),
       };`,
    );
    expect(value.pkcs1).toBe(hex(nodeSign('sha256', Buffer.from('message'), privateKey)));
    const pss = { key: createPublicKey(privateKey), padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 };
    expect(nodeVerify('sha256', Buffer.from('message'), pss, Buffer.from(value.pss as string, 'hex'))).toBe(true);
    const generated = createPublicKey({ key: Buffer.from(value.generatedSpki as string, 'hex'), format: 'der', type: 'spki' });
    expect(nodeVerify('sha384', Buffer.from('message'), { key: generated, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 48 }, Buffer.from(value.generatedPss as string, 'hex'))).toBe(true);
    expect(value.algorithm).toEqual({ name: 'RSA-PSS', modulusLength: 2048, publicExponent: [1, 0, 1], hash: { name: 'SHA-384' } });
    expect(value.unextractable).toMatchObject({ name: 'InvalidAccessError', dom: true });
  });
});

describe('keys are opaque handles of their run', () => {
  it('refuses exportKey of a non-extractable key, look-alike keys and bad arguments, with the WebCrypto error names', async () => {
    const value = await inSandbox(
      'refusals',
      `const key = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
       const fake = Object.create(CryptoKey.prototype);
       return {
         exportRaw: await caught(subtle.exportKey('raw', key)), exportJwk: await caught(subtle.exportKey('jwk', key)),
         lookAlike: await caught(subtle.sign('HMAC', { type: 'secret', algorithm: key.algorithm, usages: ['sign'], extractable: true }, utf8('x'))),
         protoFake: await caught(subtle.sign('HMAC', fake, utf8('x'))),
         getter: (() => { try { return fake.type; } catch (e) { return e.name; } })(),
         construct: (() => { try { new CryptoKey(); return 'made'; } catch (e) { return e.name; } })(),
         subtleConstruct: (() => { try { new SubtleCrypto(); return 'made'; } catch (e) { return e.name; } })(),
         unknownAlgorithm: await caught(subtle.digest('MD5', utf8('x'))),
         badFormat: await caught(subtle.exportKey('pem', key)),
         badData: await caught(subtle.digest('SHA-256', 'abc')),
         tooFew: await caught(subtle.digest('SHA-256')),
         emptyUsages: await caught(subtle.importKey('raw', utf8('k'), { name: 'HMAC', hash: 'SHA-256' }, false, [])),
         badJwk: await caught(subtle.importKey('jwk', { kty: 'oct' }, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])),
         badSpki: await caught(subtle.importKey('spki', new Uint8Array(5), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify'])),
         detached: await caught(subtle.digest.call({}, 'SHA-256', utf8('x'))),
         isPromise: (() => { const p = subtle.digest('SHA-256'); p.catch(() => {}); return p instanceof Promise; })(),
         json: JSON.stringify(key), same: crypto.subtle === subtle && key.algorithm === key.algorithm,
       };`,
    );
    expect(value.exportRaw).toMatchObject({ name: 'InvalidAccessError', dom: true });
    expect(value.exportJwk).toMatchObject({ name: 'InvalidAccessError', dom: true });
    for (const forged of ['lookAlike', 'protoFake', 'badData', 'tooFew', 'badFormat', 'detached']) expect(value[forged], forged).toMatchObject({ name: 'TypeError', dom: false });
    expect(value).toMatchObject({ getter: 'TypeError', construct: 'TypeError', subtleConstruct: 'TypeError', isPromise: true, json: '{}', same: true });
    expect(value.unknownAlgorithm).toMatchObject({ name: 'NotSupportedError', dom: true, message: expect.stringContaining('MD5') });
    expect(value.emptyUsages).toMatchObject({ name: 'SyntaxError', dom: true });
    expect(value.badJwk).toMatchObject({ name: 'DataError', dom: true });
    expect(value.badSpki).toMatchObject({ name: 'DataError', dom: true });
  });

  it("works whatever the function did to Object.prototype and the typed-array globals, with WebIDL's names and enumerable members", async () => {
    const value = await inSandbox(
      'hijacked',
      `const input = utf8('abc');
       const OriginalUint8Array = Uint8Array;
       const typedArray = Object.getPrototypeOf(Int8Array.prototype);
       const buffer = Object.getOwnPropertyDescriptor(typedArray, 'buffer');
       Object.defineProperty(Object.prototype, 'method', { get: () => 'exportKey', set() {}, configurable: true });
       Object.defineProperty(Object.prototype, 'privateKey', { get: () => ({ handle: 1 }), configurable: true });
       globalThis.Uint8Array = function () { throw new Error('hijacked'); };
       Object.defineProperty(typedArray, 'buffer', { get() { throw new Error('hijacked'); }, configurable: true });
       const key = await subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign']);
       const raw = await subtle.exportKey('raw', key);
       const digest = await subtle.digest('SHA-256', input);
       delete Object.prototype.method; delete Object.prototype.privateKey;
       globalThis.Uint8Array = OriginalUint8Array;
       Object.defineProperty(typedArray, 'buffer', buffer);
       return {
         type: key.type, raw: raw.byteLength, digest: hex(digest),
         subtleMembers: Object.keys(SubtleCrypto.prototype).length, keyMembers: Object.keys(CryptoKey.prototype),
         names: [SubtleCrypto.name, CryptoKey.name, String(crypto.subtle), String(key)],
       };`,
    );
    expect(value).toEqual({
      type: 'secret',
      raw: 64,
      digest: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      subtleMembers: 12,
      keyMembers: ['type', 'extractable', 'algorithm', 'usages'],
      names: ['SubtleCrypto', 'CryptoKey', '[object SubtleCrypto]', '[object CryptoKey]'],
    });
  });

  it('keeps nothing between calls: a key kept on globalThis is gone in the next call', async () => {
    const source = `{
      const had = globalThis.kept !== undefined;
      globalThis.kept = await subtle.importKey('raw', utf8('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      return { had, signs: (await subtle.sign('HMAC', globalThis.kept, utf8('x'))).byteLength };
    }`;
    expect(await inSandbox('kept_key', source)).toEqual({ had: false, signs: 32 });
    expect(await inSandbox('kept_key', source)).toEqual({ had: false, signs: 32 });
  });

  it("refuses another run's key handle and a closed run's, and drops a call that finishes after its run ended", async () => {
    const call = (keys: SubtleKeys, payload: unknown) => new Promise<{ ok: boolean; value: unknown }>((resolve) => keys.start(payload, (ok, value) => resolve({ ok, value })));
    const runA = new SubtleKeys();
    const runB = new SubtleKeys();
    const imported = await call(runA, { method: 'importKey', format: 'raw', keyData: new Uint8Array(16), algorithm: { name: 'HMAC', hash: 'SHA-256' }, extractable: false, usages: ['sign'] });
    expect(imported.ok).toBe(true);
    const handle = (imported.value as { handle: number }).handle;
    const sign = { method: 'sign', algorithm: { name: 'HMAC' }, key: handle, data: new Uint8Array(1) };
    expect((await call(runA, sign)).ok).toBe(true);
    expect(await call(runB, sign)).toEqual({ ok: false, value: { code: 'InvalidAccessError', message: 'crypto.subtle: key is not a key of this run' } });
    runA.close();
    expect(runA.size).toBe(0);
    expect(await call(runA, sign)).toEqual({ ok: false, value: { code: 'InvalidStateError', message: 'crypto.subtle: the run has ended' } });

    // A PBKDF2 call on the threadpool when its run ends: never answered, no key kept, nothing thrown.
    const runC = new SubtleKeys();
    const base = await call(runC, { method: 'importKey', format: 'raw', keyData: new Uint8Array(8), algorithm: { name: 'PBKDF2' }, extractable: false, usages: ['deriveBits', 'deriveKey'] });
    let answered = false;
    const derive = { method: 'deriveKey', algorithm: { name: 'PBKDF2', hash: 'SHA-256', salt: new Uint8Array(8), iterations: 200_000 }, baseKey: (base.value as { handle: number }).handle };
    runC.start({ ...derive, derivedKeyType: { name: 'AES-GCM', length: 256 }, extractable: true, usages: ['encrypt'] }, () => (answered = true));
    runC.close();
    await sleep(1500);
    expect(answered).toBe(false);
    expect(runC.size).toBe(0);
  });
});

describe('crypto.getRandomValues', () => {
  it('refuses a float array or DataView with TypeMismatchError (even an oversized one), over 65,536 bytes with QuotaExceededError, and fills every integer array kind up to that', async () => {
    const value = await inSandbox(
      'random_values_errors',
      `const refused = (make) => { try { make(); return 'filled'; } catch (e) { return { name: e.name, code: e.code, dom: e instanceof DOMException }; } };
       const fakeTag = new Float32Array(4);
       Object.defineProperty(fakeTag, Symbol.toStringTag, { value: 'Uint8Array' });
       const mismatch = {
         float32: refused(() => crypto.getRandomValues(new Float32Array(4))),
         float64Oversized: refused(() => crypto.getRandomValues(new Float64Array(65536 / 8 + 1))),
         dataView: refused(() => crypto.getRandomValues(new DataView(new ArrayBuffer(8)))),
         fakeTag: refused(() => crypto.getRandomValues(fakeTag)),
       };
       const kinds = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array];
       const quota = kinds.map((Kind) => refused(() => crypto.getRandomValues(new Kind(65536 / Kind.BYTES_PER_ELEMENT + 1))));
       const filled = kinds.map((Kind) => {
         const array = crypto.getRandomValues(new Kind(65536 / Kind.BYTES_PER_ELEMENT));
         return [array.constructor.name, new Set(new Uint8Array(array.buffer)).size > 200];
       });
       return { mismatch, quota, filled, notAView: refused(() => crypto.getRandomValues([1, 2, 3])) };`,
    );
    const kinds = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
    expect(value.mismatch).toEqual({
      float32: { name: 'TypeMismatchError', code: 17, dom: true },
      float64Oversized: { name: 'TypeMismatchError', code: 17, dom: true },
      dataView: { name: 'TypeMismatchError', code: 17, dom: true },
      fakeTag: { name: 'TypeMismatchError', code: 17, dom: true },
    });
    expect(value.quota).toEqual(kinds.map(() => ({ name: 'QuotaExceededError', code: 22, dom: true })));
    expect(value.filled).toEqual(kinds.map((kind) => [kind, true]));
    expect(value.notAView).toEqual({ name: 'TypeError', code: undefined, dom: false });
  });
});

describe('bounds', () => {
  it(`refuses key ${SUBTLE_LIMITS.keys + 1} of a run with QuotaExceededError, and the run's keys keep working`, async () => {
    const value = await inSandbox(
      'key_cap',
      `const keys = [];
       for (let i = 0; i < ${SUBTLE_LIMITS.keys}; i++) keys.push(await subtle.importKey('raw', utf8('k' + i), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']));
       const over = await caught(subtle.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']));
       return { over, stillSigns: (await subtle.sign('HMAC', keys[0], utf8('x'))).byteLength };`,
      { timeoutMs: 60_000 },
    );
    expect(value.over).toMatchObject({ name: 'QuotaExceededError', dom: true, message: `crypto.subtle: a run may hold at most ${SUBTLE_LIMITS.keys} keys; reuse the keys it has` });
    expect(value.stillSigns).toBe(32);
  });

  it(`refuses a call with more than ${SUBTLE_LIMITS.inputBytes / 1024 / 1024} MB of input, and takes one of exactly that`, async () => {
    const value = await inSandbox(
      'input_cap',
      `const big = new Uint8Array(${SUBTLE_LIMITS.inputBytes});
       const atLimit = hex(await subtle.digest('SHA-256', big));
       const over = await caught(subtle.digest('SHA-256', new Uint8Array(${SUBTLE_LIMITS.inputBytes + 1})));
       // Two slow calls take the run's turns on the threadpool, so the digests wait in its queue, holding their input.
       const base = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
       const slow = [1, 2].map(() => subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-512', salt: utf8('salt'), iterations: ${SUBTLE_LIMITS.pbkdf2Work} }, base, 512));
       const many = await caught(Promise.all([1, 2, 3].map(() => subtle.digest('SHA-256', big))));
       await Promise.all(slow);
       return { atLimit, over, many };`,
      { memoryMb: 256, timeoutMs: 60_000 },
    );
    expect(value.atLimit).toBe(createHash('sha256').update(Buffer.alloc(SUBTLE_LIMITS.inputBytes)).digest('hex'));
    expect(value.over).toMatchObject({ name: 'QuotaExceededError', dom: true, message: expect.stringContaining(`at most ${SUBTLE_LIMITS.inputBytes / 1024 / 1024} MB`) });
    // Three waiting calls of 16 MB would hold more than heldBytes.
    expect(value.many).toMatchObject({ name: 'QuotaExceededError', dom: true, message: expect.stringContaining(`over ${SUBTLE_LIMITS.heldBytes / 1024 / 1024} MB`) });
  });

  it(`refuses call ${SUBTLE_LIMITS.pending + 1} while ${SUBTLE_LIMITS.pending} are unfinished, and runs the waiting ones in turn`, async () => {
    const value = await inSandbox(
      'pending_cap',
      `const base = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits']);
       const slow = [1, 2].map(() => subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-512', salt: utf8('salt'), iterations: ${SUBTLE_LIMITS.pbkdf2Work} }, base, 512));
       const waiting = [];
       for (let i = 2; i < ${SUBTLE_LIMITS.pending}; i++) waiting.push(subtle.digest('SHA-1', utf8('abc')));
       const over = await caught(subtle.digest('SHA-1', utf8('abc')));
       const digests = new Set((await Promise.all(waiting)).map(hex));
       await Promise.all(slow);
       return { over, digests: [...digests], count: waiting.length, after: hex(await subtle.digest('SHA-1', utf8('abc'))) };`,
      { timeoutMs: 60_000 },
    );
    expect(value.over).toMatchObject({ name: 'QuotaExceededError', message: `crypto.subtle: more than ${SUBTLE_LIMITS.pending} calls unfinished at once; await some before starting more` });
    expect(value).toMatchObject({ digests: ['a9993e364706816aba3e25717850c26c9cd0d89d'], count: SUBTLE_LIMITS.pending - 2, after: 'a9993e364706816aba3e25717850c26c9cd0d89d' });
  });

  it('refuses PBKDF2 work and RSA sizes over their bounds with OperationError before any work is done', async () => {
    const value = await inSandbox(
      'param_caps',
      `const base = await subtle.importKey('raw', utf8('pw'), 'PBKDF2', false, ['deriveBits', 'deriveKey']);
       const params = (iterations) => ({ name: 'PBKDF2', hash: 'SHA-256', salt: utf8('salt'), iterations });
       const started = Date.now();
       return {
         iterations: await caught(subtle.deriveBits(params(${SUBTLE_LIMITS.pbkdf2Work + 1}), base, 256)),
         blocks: await caught(subtle.deriveKey(params(${SUBTLE_LIMITS.pbkdf2Work / 2 + 1}), base, { name: 'HMAC', hash: 'SHA-512' }, false, ['sign'])),
         rsa: await caught(subtle.generateKey({ name: 'RSA-OAEP', modulusLength: 8192, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, false, ['encrypt'])),
         ms: Date.now() - started,
       };`,
    );
    expect(value.iterations).toMatchObject({ name: 'OperationError', message: expect.stringContaining(`${SUBTLE_LIMITS.pbkdf2Work + 1} iterations × 1 output block(s) is over the limit`) });
    // HMAC SHA-512's default key length is its block size, 1024 bits: four SHA-256 blocks.
    expect(value.blocks).toMatchObject({ name: 'OperationError', message: expect.stringContaining('× 4 output block(s)') });
    expect(value.rsa).toMatchObject({ name: 'OperationError', message: expect.stringContaining(`more than ${SUBTLE_LIMITS.rsaGenerateBits} bits`) });
    expect(value.ms).toBeLessThan(500);
  });

  it(`imports an RSA public key of ${SUBTLE_LIMITS.rsaImportBits} bits and refuses one of more with OperationError`, async () => {
    // A modulus of the given size (the top bit set, odd): importing checks sizes, not primes.
    const modulus = (bits: number): string => {
      const n = randomBytes(bits / 8);
      n[0]! |= 0x80;
      n[n.length - 1]! |= 1;
      return b64url(n);
    };
    const value = await inSandbox(
      'rsa_import_cap',
      `const importRsa = (n) => subtle.importKey('jwk', { kty: 'RSA', n, e: 'AQAB' }, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['verify']);
       return { atLimit: (await importRsa('${modulus(SUBTLE_LIMITS.rsaImportBits)}')).algorithm.modulusLength, over: await caught(importRsa('${modulus(SUBTLE_LIMITS.rsaImportBits + 64)}')) };`,
    );
    expect(value.atLimit).toBe(SUBTLE_LIMITS.rsaImportBits);
    expect(value.over).toMatchObject({ name: 'OperationError', message: `crypto.subtle: RSA keys of more than ${SUBTLE_LIMITS.rsaImportBits} bits are not accepted` });
  });

  it('ends a run waiting on PBKDF2 at its deadline; the sandbox host stays up and serves the next run while the late results are dropped', async () => {
    await inSandbox('warm', `return hex(await subtle.digest('SHA-1', utf8('')));`);
    const hosts = engine.sandboxHosts.map((h) => h.pid);
    await defineFunction(
      engine,
      { name: 'slow_pbkdf2', timeoutMs: 300 },
      `export default async () => {
        const base = await crypto.subtle.importKey('raw', new Uint8Array(8), 'PBKDF2', false, ['deriveBits']);
        const params = { name: 'PBKDF2', hash: 'SHA-512', salt: new Uint8Array(8), iterations: ${SUBTLE_LIMITS.pbkdf2Work} };
        return Promise.all([1, 2, 3, 4].map(() => crypto.subtle.deriveBits(params, base, 512)));
      }`,
    );
    const started = performance.now();
    const result = await engine.run('slow_pbkdf2', {}, { caller: 'test' });
    const endedAfter = performance.now() - started;
    expect(result).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(endedAfter).toBeLessThan(1000);
    // Two of the four calls were on the threadpool when the run ended; the next run is answered meanwhile.
    const next = performance.now();
    expect(await inSandbox('after_deadline', `return hex(await subtle.digest('SHA-1', utf8('abc')));`)).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(performance.now() - next).toBeLessThan(1000);
    await sleep(3000);
    expect(await inSandbox('after_deadline', `return hex(await subtle.digest('SHA-1', utf8('abc')));`)).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(engine.sandboxHosts.map((h) => h.pid)).toEqual(hosts);
  });
});
