return run('limiter', 'SLICE')
