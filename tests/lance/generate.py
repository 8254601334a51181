import numpy as np, pyarrow as pa, lance.file, sys
def vals(path, dt, n):
    a = np.fromfile(path, dtype=dt)[:n]
    return a
n = 5000
f64 = vals('/work/main/data/tmy3_Dry_bulb.f64', '<f8', n)
f32 = vals('/work/main/data/ferret_coads_climatology_SLP.f32', '<f4', n)
mask = np.zeros(n, bool); mask[::7] = True; mask[100:300] = True
def table(meta):
    fields = [pa.field('x64', pa.float64(), metadata=meta), pa.field('x32', pa.float32(), metadata=meta),
              pa.field('n64', pa.float64(), metadata=meta), pa.field('n32', pa.float32(), metadata=meta)]
    arrs = [pa.array(f64), pa.array(f32), pa.array(f64, mask=mask), pa.array(f32, mask=mask)]
    return pa.table(arrs, schema=pa.schema(fields))
for ver in ['2.1', '2.2']:
    for name, meta in [('default', None), ('zstd_bss', {'lance-encoding:compression':'zstd','lance-encoding:bss':'on'}),
                       ('lz4_bss', {'lance-encoding:compression':'lz4','lance-encoding:bss':'on'})]:
        t = table(meta)
        p = f'{name}_{ver}.lance'
        with lance.file.LanceFileWriter(p, t.schema, version=ver) as w:
            w.write_batch(t)
        back = lance.file.LanceFileReader(p).read_all().to_table()
        assert back.equals(t), p
        print(p)

# A file with a column that is not fixed-width, between two that are.
t = pa.table({'a': pa.array([1.5, None, 3.0]), 'label': pa.array(['x', 'y', 'z']), 'b': pa.array([1, 2, 3], pa.int32())})
with lance.file.LanceFileWriter('mixed_2.2.lance', t.schema) as w:
    w.write_batch(t)
print('mixed_2.2.lance')

# Several pages per column: a small write cache, written 1000 rows at a time.
for ver in ['2.1', '2.2']:
    t = table({'lance-encoding:compression': 'zstd', 'lance-encoding:bss': 'on'})
    p = f'pages_{ver}.lance'
    with lance.file.LanceFileWriter(p, t.schema, version=ver, data_cache_bytes=4 * 8192) as w:
        for b in t.to_batches(max_chunksize=1000):
            w.write_batch(b)
    assert lance.file.LanceFileReader(p).read_all().to_table().equals(t), p
    print(p)

# Only a string column: nothing miniblock decodes (decode must say so, not panic).
t = pa.table({'s': ['a', 'bb', None, 'ccc']})
with lance.file.LanceFileWriter('strings_2.2.lance', t.schema) as w:
    w.write_batch(t)
print('strings_2.2.lance')
