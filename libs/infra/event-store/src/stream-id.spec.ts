import { checkStreamId, streamTypeOf, toStreamId } from './stream-id';
import { eventSubject } from './nats-outbox.publisher';

describe('stream ids', () => {
  it('takes the stream type from the text before the first dash', () => {
    expect(streamTypeOf(toStreamId('run', '7f3a-11ee'))).toBe('run');
    expect(eventSubject('node-web-01')).toBe('granule.events.node.node-web-01');
    expect(eventSubject('run-42', 'test.events')).toBe('test.events.run.run-42');
  });

  it('rejects ids without a type or with characters that break a NATS subject', () => {
    expect(checkStreamId('run-42')).toBeNull();
    expect(checkStreamId('run42')).toBe("stream id 'run42' must look like '<type>-<id>'");
    expect(checkStreamId('-42')).toBe("stream id '-42' must look like '<type>-<id>'");
    expect(checkStreamId('run-')).toBe("stream id 'run-' must look like '<type>-<id>'");
    expect(checkStreamId('run-a.b')).toBe("stream id 'run-a.b' must not contain whitespace, '.', '*' or '>'");
    expect(checkStreamId('run-a b')).toBe("stream id 'run-a b' must not contain whitespace, '.', '*' or '>'");
  });
});
