import 'reflect-metadata';

export * from './deployment-commands.dto';
