import { splitWith } from './append-events.sql';

describe('splitWith (a write-through with a WITH list of its own)', () => {
  it('leaves a statement without WITH whole', () => {
    expect(splitWith(' UPDATE runs SET state = $1 ')).toEqual({ ctes: '', main: 'UPDATE runs SET state = $1' });
  });

  it('splits the WITH list from the main statement, nested parentheses included', () => {
    const sql = `WITH upserted AS (INSERT INTO runs (a) SELECT (x).a FROM f((1)) RETURNING a), more AS (SELECT 1)
      INSERT INTO run_listing (a) SELECT a FROM upserted`;
    expect(splitWith(sql)).toEqual({
      ctes: 'upserted AS (INSERT INTO runs (a) SELECT (x).a FROM f((1)) RETURNING a), more AS (SELECT 1)',
      main: 'INSERT INTO run_listing (a) SELECT a FROM upserted',
    });
  });

  it('refuses a WITH list with no statement after it', () => {
    expect(() => splitWith('WITH a AS (SELECT 1)')).toThrow('without a main statement');
  });
});
