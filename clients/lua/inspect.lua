return inspect()
