return run('limiter', 'LEASE')
