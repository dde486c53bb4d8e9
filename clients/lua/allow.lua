return (G or lib()).several(true)
