return run('limiter', 'SLIDE')
