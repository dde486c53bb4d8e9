return (G or lib()).release()
