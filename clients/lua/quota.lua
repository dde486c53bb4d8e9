return run('limiter', 'QUOTA')
