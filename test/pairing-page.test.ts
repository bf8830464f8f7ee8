/** The owner's side of pairing: the /pair approval page and the approval lockout. */
import { afterEach, describe, expect, test } from 'bun:test';
import { bearerToken } from '../src/http/auth.ts';
import { lockedText } from '../src/pairing/page.tsx';
import { answer, INSTALLATION, OTHER_INSTALLATION, type TestService } from './support.ts';
import {
  decide,
  expectPage,
  form,
  PASSWORD,
  poll,
  startPairing,
  submitForm,
  WRONG_PASSWORD,
  deviceRows,
  MINUTE,
  startPairingService,
} from './pairing-support.ts';

// The file's own clock and service: tests move the one and `start` replaces the other.
let clock = Date.UTC(2026, 10, 25, 12, 0, 0);
const now = () => clock;
let service: TestService;
const start = async (overrides = {}, dir?: string) => (service = await startPairingService(now, overrides, dir));
afterEach(() => service?.close());

describe('the /pair page', () => {
  test('every answer is a page with the strict headers', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION, 'MG4');
    const get = (path: string) => service.request('GET', path, { token: null });

    expect(await expectPage(await get('/pair'), 200)).toContain('name="code"');
    const approval = await expectPage(await get(`/pair?code=${started.userCode}`), 200);
    expect(approval).toContain(INSTALLATION);
    expect(approval).toContain('<meta name="viewport"');
    expect(await expectPage(await get('/pair?code=BBBB-BBBB'), 404)).toContain(
      'This code is not open: it has expired, or the car has already collected its token',
    );
    expect(await expectPage(await get('/pair?code=<b>'), 404)).toContain(
      'That is not a pairing code. Type the 8 letters the car shows',
    );
    await expectPage(await submitForm(service, { code: started.userCode, password: PASSWORD, decision: 'maybe' }), 400);
    await expectPage(
      await service.request('POST', '/pair', { body: 'x'.repeat(5000), token: null, headers: form }),
      400,
    );
    await expectPage(
      await service.request('POST', '/pair', { body: new Uint8Array([0xff, 0xfe]), token: null, headers: form }),
      404,
    );
    // The right code and password sent as another kind of form are refused as such, and decide nothing.
    const fields = { code: started.userCode, password: PASSWORD, decision: 'approve' };
    const multipart = new FormData();
    for (const [name, value] of Object.entries(fields)) multipart.append(name, value);
    const asJson = { 'content-type': 'application/json' };
    for (const refused of [
      await service.app.handle(new Request('http://localhost/pair', { method: 'POST', body: multipart })),
      await service.request('POST', '/pair', { body: JSON.stringify(fields), token: null, headers: asJson }),
    ]) {
      expect(await expectPage(refused, 400)).toContain(
        'The form could not be read (form must be sent as application/x-www-form-urlencoded). Go back and try again.',
      );
    }
    // The type is checked before the body is read: a JSON body over the cap is refused as the wrong kind, unread.
    const largeJson = await service.request('POST', '/pair', { body: 'x'.repeat(5000), token: null, headers: asJson });
    expect(await expectPage(largeJson, 400)).toContain('form must be sent as application/x-www-form-urlencoded');
    expect((await poll(service, started.pairingId)).body).toMatchObject({ status: 'pending' });
    await expectPage(await decide(service, 'BBBB-BBBB', 'approve'), 404);
    await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(service.log.lines).toContainEqual(
      expect.stringContaining(`warn pairing.wrong_password installation=${INSTALLATION}`),
    );
    const put = await service.request('PUT', '/pair', { token: null });
    await expectPage(put, 405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 200)).toContain('Car approved');
    expect(await expectPage(await get(`/pair?code=${started.userCode}`), 200)).toContain('already been approved');
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    const locked = await decide(service, started.userCode, 'approve');
    await expectPage(locked, 429);
    expect(locked.headers.get('retry-after')).toBe('60');
  });

  test('a failure is a page saying only that something went wrong; the log has its detail', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    service.pairing!.book.find = () => {
      throw new Error('boom');
    };
    const failed = await expectPage(
      await service.request('GET', `/pair?code=${started.userCode}`, { token: null }),
      500,
    );
    expect(failed).toContain('Something went wrong');
    expect(failed).not.toContain('boom');
    expect(service.log.lines).toContainEqual(expect.stringContaining('error pairing.page_failed error="Error: boom"'));
  });

  test('the code is accepted in any case, with or without the dash', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const loose = started.userCode.replace('-', '').toLowerCase();
    expect((await service.request('GET', `/pair?code=${loose}`, { token: null })).status).toBe(200);
    expect((await decide(service, loose, 'approve')).status).toBe(200);
    expect(await poll(service, started.pairingId)).toMatchObject({ body: { status: 'approved' } });
  });

  test('a code of other than 8 letters is told to be no code, not one that expired', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const notACode = 'That is not a pairing code. Type the 8 letters the car shows, such as BCDF-GHJK.';
    for (const typed of [`${started.userCode}B`, started.userCode.slice(0, -1)]) {
      expect(await expectPage(await service.request('GET', `/pair?code=${typed}`, { token: null }), 404)).toContain(
        notACode,
      );
      expect(await expectPage(await decide(service, typed, 'approve'), 404)).toContain(notACode);
    }
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test('a form is read as one whatever the case and parameters of its type, or without a type', async () => {
    await start();
    const fields = (userCode: string) =>
      new URLSearchParams({ code: userCode, password: PASSWORD, decision: 'approve' }).toString();
    const typed = await startPairing(service, INSTALLATION);
    const headers = { 'content-type': 'Application/X-WWW-Form-Urlencoded ; charset=UTF-8' };
    expect(
      await expectPage(
        await service.request('POST', '/pair', { body: fields(typed.userCode), token: null, headers }),
        200,
      ),
    ).toContain('Car approved');
    const untyped = await startPairing(service, OTHER_INSTALLATION);
    const body = new TextEncoder().encode(fields(untyped.userCode)); // bytes: fetch gives them no type
    expect(
      await expectPage(await service.app.handle(new Request('http://localhost/pair', { method: 'POST', body })), 200),
    ).toContain('Car approved');
    for (const { pairingId } of [typed, untyped])
      expect(await poll(service, pairingId)).toMatchObject({ body: { status: 'approved' } });
  });

  test('the car name is shown as text, never as markup', async () => {
    await start();
    const name = '<script>alert(1)</script>"&';
    const started = await startPairing(service, INSTALLATION, name);
    const html = await (await service.request('GET', `/pair?code=${started.userCode}`, { token: null })).text();
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;');
    expect(html).not.toContain('<script');
    expect(await (await decide(service, started.userCode, 'approve')).text()).not.toContain('<script');
  });

  test('a code is refused from the millisecond its request expires, as by the poll, before any sweep', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const look = () => service.request('GET', `/pair?code=${started.userCode}`, { token: null });
    clock += 10 * MINUTE - 1;
    expect(await expectPage(await look(), 200)).toContain('<h1>Approve this car?</h1>');
    clock += 1;
    expect(await expectPage(await look(), 404)).toContain('This code is not open: it has expired');
    expect(await expectPage(await decide(service, started.userCode, 'approve'), 404)).toContain(
      'This code is not open: it has expired',
    );
    expect(deviceRows(service)).toEqual([]);
    expect(await poll(service, started.pairingId)).toEqual({ status: 200, body: { status: 'expired' } });
  });

  test("the car's page tells the minutes left, rounded up, one of them singular", async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const expires = async () => {
      const html = await expectPage(
        await service.request('GET', `/pair?code=${started.userCode}`, { token: null }),
        200,
      );
      return /<dt>Expires<\/dt>\s*<dd>([^<]*)<\/dd>/.exec(html)?.[1];
    };
    expect(await expires()).toBe('in about 10 minutes');
    clock += MINUTE / 2;
    expect(await expires()).toBe('in about 10 minutes');
    clock += 8 * MINUTE;
    expect(await expires()).toBe('in about 2 minutes');
    clock += MINUTE / 2 + 1;
    expect(await expires()).toBe('in about 1 minute');
  });

  test('a code that is not open comes back in the field as typed: trimmed, cut to the field, escaped', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    /** The code field's value attribute as sent, or null when it has none. */
    const fieldValue = (html: string) => {
      const field = /<input id="code"[^>]*>/.exec(html)![0];
      return /\svalue="([^"]*)"/.exec(field)?.[1] ?? null;
    };
    const typedBack = async (typed: string) =>
      fieldValue(
        await expectPage(await service.request('GET', `/pair?code=${encodeURIComponent(typed)}`, { token: null }), 404),
      );
    expect(fieldValue(await expectPage(await service.request('GET', '/pair', { token: null }), 200))).toBeNull();
    expect(await typedBack('  bcdf-ghjx ')).toBe('bcdf-ghjx'); // a code no request has
    expect(await typedBack('BCDF-GHJK-LMNP')).toBe('BCDF-GHJK-LM'); // no code: cut to the field's 12
    expect(await typedBack('"><b>x</b>&amp;')).toBe('&quot;&gt;&lt;b&gt;x&lt;/b&gt;&amp;a');
    expect(await typedBack('BCDF-GHJK-X\u{1F697}')).toBe('BCDF-GHJK-X'); // the car emoji's second half would pass 12
    // Sent with the form: an unknown code, and a code that expired.
    const posted = await expectPage(await decide(service, 'bcdf ghjx', 'approve'), 404);
    expect(fieldValue(posted)).toBe('bcdf ghjx');
    clock += 10 * MINUTE;
    expect(fieldValue(await expectPage(await decide(service, started.userCode, 'approve'), 404))).toBe(
      started.userCode,
    );
  });
});

/** The page's notice, or null when it has none. */
const noticeOf = (html: string) => /<p class="notice" role="alert">([^<]*)<\/p>/.exec(html)?.[1] ?? null;

describe('approval lockout', () => {
  test('five wrong passwords lock every password check for 60 s, the right one included', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 4; i += 1)
      expect((await decide(service, started.userCode, 'approve', WRONG_PASSWORD)).status).toBe(403);
    // The fifth says so, with a link back to the car's page (a GET: going back would send the form again).
    const fifth = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(fifth).toContain('<h1>Wrong password</h1>');
    expect(fifth).toContain(`<a href="?code=${started.userCode}">Back to this car</a>`);
    const locked = await decide(service, started.userCode, 'approve');
    expect(locked.headers.get('retry-after')).toBe('60');
    // Its one link leads on to the code form, relative to the page's address: not the form sent again.
    const lockedPage = await expectPage(locked, 429);
    expect(lockedPage).toContain('<h1>Locked for now</h1>');
    expect(lockedPage.match(/<a\s[^>]*>[^<]*<\/a>/g)).toEqual(['<a href="?">Enter a code</a>']);
    expect(await expectPage(await service.request('GET', '/pair?', { token: null }), 200)).toContain(
      '<form method="get">',
    );
    // Sent from the car's page, whose address names the code, it leads back there, without reading the form.
    const fromCarPage = await service.request('POST', `/pair?code=${started.userCode.toLowerCase()}`, {
      body: 'code=BBBB-BBBB&password=x&decision=approve',
      token: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect((await expectPage(fromCarPage, 429)).match(/<a\s[^>]*>[^<]*<\/a>/g)).toEqual([
      `<a href="?code=${started.userCode}">Back to this car</a>`,
    ]);
    // The car's page says it is locked before anyone types the password.
    const carPage = await expectPage(
      await service.request('GET', `/pair?code=${started.userCode}`, { token: null }),
      200,
    );
    expect(carPage).toContain(
      '<p class="notice" role="alert">Too many wrong passwords (5 in a row). Try again in 60 seconds.</p>',
    );
    // The lock comes first: an unknown code is not even looked at.
    expect((await decide(service, 'BBBB-BBBB', 'approve')).status).toBe(429);
    const devices = await service.request('GET', '/v1/devices', { token: PASSWORD });
    expect(devices.headers.get('retry-after')).toBe('60');
    expect(await answer(devices)).toEqual({ status: 429, body: { error: 'too many wrong passwords, retry later' } });

    clock += 30_000;
    expect((await decide(service, started.userCode, 'approve')).headers.get('retry-after')).toBe('30');
    clock += 30_000;
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });

  test('the page warns of the lockout before any password; a wrong one tells the tries left, server-wide', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const warning =
      '<p id="lockout" class="hint">5 wrong passwords in a row lock the approval password for 60 seconds.</p>';
    const wrong = async () => expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    const approval = await expectPage(
      await service.request('GET', `/pair?code=${started.userCode}`, { token: null }),
      200,
    );
    expect([approval.includes(warning), noticeOf(approval)]).toEqual([true, null]);
    expect(approval).toContain('aria-describedby="lockout"');

    const first = await wrong();
    expect([first.includes(warning), noticeOf(first)]).toEqual([
      true,
      'Wrong password. 4 tries left before the approval password locks for 60 seconds.',
    ]);
    for (let i = 0; i < 2; i += 1)
      expect((await service.request('GET', '/v1/devices', { token: WRONG_PASSWORD })).status).toBe(401);
    expect(noticeOf(await wrong())).toBe(
      'Wrong password. 1 try left before the approval password locks for 60 seconds.',
    ); // the fourth, two of them elsewhere
    // A right password anywhere starts the count again.
    expect((await service.request('GET', '/v1/devices', { token: PASSWORD })).status).toBe(200);
    expect(noticeOf(await wrong())).toBe(
      'Wrong password. 4 tries left before the approval password locks for 60 seconds.',
    );
    expect(noticeOf(await wrong())).toBe(
      'Wrong password. 3 tries left before the approval password locks for 60 seconds.',
    );
  });

  test('forms already arriving when the lock begins are refused too: guessing in parallel gains nothing', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    const answers = await Promise.all([
      ...Array.from({ length: 30 }, () => decide(service, started.userCode, 'approve', WRONG_PASSWORD)),
      decide(service, started.userCode, 'approve'),
    ]);
    const statuses = answers.map((response) => response.status);
    expect(statuses.filter((status) => status === 403)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(26);
    expect(deviceRows(service)).toEqual([]);
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test('a form still arriving when the lock begins is refused as locked, before its code is looked at', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    let finish = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('code=BBBB-BBBB&password=x'));
        finish = () => controller.close();
      },
    });
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const arriving = service.app.handle(
      new Request('http://localhost/pair', { method: 'POST', body, headers, duplex: 'half' } as RequestInit),
    );
    for (let i = 0; i < 5; i += 1)
      expect((await decide(service, started.userCode, 'approve', WRONG_PASSWORD)).status).toBe(403);
    finish();
    expect((await arriving).status).toBe(429); // not 404 for the unknown code
  });

  test('Deny needs the right password too', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    expect((await decide(service, started.userCode, 'deny', WRONG_PASSWORD)).status).toBe(403);
    expect((await poll(service, started.pairingId)).body).toEqual({ status: 'pending' });
  });

  test("the lockout's wait is told in seconds, one of them singular", () => {
    expect(lockedText({ seconds: 60, everyone: false })).toBe(
      'Too many wrong passwords (5 in a row). Try again in 60 seconds.',
    );
    expect(lockedText({ seconds: 1, everyone: false })).toBe(
      'Too many wrong passwords (5 in a row). Try again in 1 second.',
    );
  });

  test('the device endpoints count towards the lockout; one without a password (any page can) does not', async () => {
    await start();
    const devices = (token: string | null, headers?: Record<string, string>) =>
      service.request('GET', '/v1/devices', { token, headers });
    for (let i = 0; i < 4; i += 1) {
      expect(await answer(await devices(WRONG_PASSWORD))).toEqual({ status: 401, body: { error: 'unauthorized' } });
    }
    for (let i = 0; i < 10; i += 1) expect((await devices(null)).status).toBe(401);
    // Credentials a URL gives a browser.
    expect((await devices(null, { authorization: 'Basic b3duZXI6cGFzc3dvcmQ=' })).status).toBe(401);
    // The scheme without a token: a header's trailing space is trimmed on the way in (it arrives as `Bearer`),
    // so only a direct caller can hand bearerToken an empty token; that presents no password either.
    expect((await devices(null, { authorization: 'Bearer ' })).status).toBe(401);
    expect(bearerToken('Bearer ')).toBeNull();
    expect((await devices(WRONG_PASSWORD)).status).toBe(401); // the fifth wrong password
    expect((await devices(PASSWORD)).status).toBe(429);
    expect((await devices(null)).status).toBe(429);
  });

  test('a right password resets the count; unknown codes and forms without a password are not counted', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 4; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await service.request('GET', '/v1/devices', { token: PASSWORD })).status).toBe(200);
    for (let i = 0; i < 4; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    for (let i = 0; i < 10; i += 1)
      expect((await decide(service, 'BBBB-BBBB', 'approve', WRONG_PASSWORD)).status).toBe(404);
    // A form any web page could post: it guesses nothing.
    for (let i = 0; i < 3; i += 1)
      expect((await submitForm(service, { code: started.userCode, decision: 'approve' })).status).toBe(403);
    expect((await decide(service, started.userCode, 'deny')).status).toBe(200);
  });

  test('a lockout restarts the count: after it, one wrong password leaves 4 tries; the right one passes', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    expect((await decide(service, started.userCode, 'approve')).status).toBe(429);
    clock += 60_000;
    const wrong = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(noticeOf(wrong)).toBe('Wrong password. 4 tries left before the approval password locks for 60 seconds.');
    expect((await decide(service, started.userCode, 'approve')).status).toBe(200);
  });

  test('forms without a password use up no tries: a wrong password after five of them leaves 4', async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1)
      expect((await submitForm(service, { code: started.userCode, decision: 'approve' })).status).toBe(403);
    const wrong = await expectPage(await decide(service, started.userCode, 'approve', WRONG_PASSWORD), 403);
    expect(noticeOf(wrong)).toBe('Wrong password. 4 tries left before the approval password locks for 60 seconds.');
  });

  test("the lockout's Retry-After rounds up: 0.5 s before its end it says 1; it ends at 60 s, not before", async () => {
    await start();
    const started = await startPairing(service, INSTALLATION);
    for (let i = 0; i < 5; i += 1) await decide(service, started.userCode, 'approve', WRONG_PASSWORD);
    const lockedAt = clock;
    const right = async () => {
      const response = await decide(service, started.userCode, 'approve');
      return [response.status, response.headers.get('retry-after')];
    };
    clock = lockedAt + 59_500;
    expect(await right()).toEqual([429, '1']);
    clock = lockedAt + 59_999;
    expect(await right()).toEqual([429, '1']);
    clock = lockedAt + 60_000;
    expect(await right()).toEqual([200, null]);
  });
});
