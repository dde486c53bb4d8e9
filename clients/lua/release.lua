return run('release')
